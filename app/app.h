/* app/app.h: the command line. The only layer (with ui/) that prints to the
 * user and the only one that exits. */
#ifndef TT_APP_APP_H
#define TT_APP_APP_H

int app_main(int argc, char **argv);

#endif
