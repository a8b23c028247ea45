/* base/clock.h: monotonic and wall clocks in seconds. */
#ifndef TT_BASE_CLOCK_H
#define TT_BASE_CLOCK_H

double clock_mono(void); /* CLOCK_MONOTONIC, for durations */
double clock_wall(void); /* CLOCK_REALTIME, for timestamps in records */

#endif
