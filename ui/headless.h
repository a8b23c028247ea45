/* ui/headless.h: the reporter used when stdout is not a terminal (or with
 * --headless): the classic per-task progress line and, every so often and
 * at the end, the scheduler table with the estimated total latency. */
#ifndef TT_UI_HEADLESS_H
#define TT_UI_HEADLESS_H

#include <stdio.h>

#include "tuner/engine.h"

/* Runs until the engine finishes; returns when it has. `stop_flag` is polled
 * (set by the SIGINT handler) and turns into Engine_requestStop. */
int Headless_run(Engine *engine, FILE *out, volatile int *stop_flag, double table_every_s);

/* Writes the scheduler table of a snapshot (also used by `tunetop best`-like views). */
void Headless_printTable(FILE *out, Engine *engine, const SessionSnapshot *snap);
/* Writes the devices table (rank, host, device, state, candidates/s, errors,
 * last heard from); printed under the scheduler table in an MPI session. */
void Headless_printDevices(FILE *out, Engine *engine);

#endif
