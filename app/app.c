#include "app/app.h"

#include <stdio.h>

int app_main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "tunetop: not built yet\n");
    return 1;
}
