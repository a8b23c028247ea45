/* ui/headless.c: see headless.h. */
#include "ui/headless.h"

int Headless_run(Engine *engine, FILE *out, volatile int *stop_flag, double table_every_s) {
    (void)engine; (void)out; (void)stop_flag; (void)table_every_s;
    return 0;
}

void Headless_printTable(FILE *out, Engine *engine, const SessionSnapshot *snap) {
    (void)out; (void)engine; (void)snap;
}
