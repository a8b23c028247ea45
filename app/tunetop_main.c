/* app/tunetop_main.c: entry point; dispatches to the subcommands in app/. */
#include "app/app.h"

int main(int argc, char **argv) { return app_main(argc, argv); }
