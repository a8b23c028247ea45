/* bench/log_gen.h: the realistic record the log benches write (log_bench,
 * log_read_bench): record i of a log over `tasks` conv2d task keys, 8 knob
 * choices, config text, three costs, timings, every 5th an error with a
 * message. Header-only: each bench is one source file. */
#ifndef TT_BENCH_LOG_GEN_H
#define TT_BENCH_LOG_GEN_H

#include <stdio.h>

#include "records/record.h"

static inline void LogGen_record(Record *r, long i, int tasks) {
    Record_done(r);
    Record_init(r);
    int task = (int)(i % tasks);
    snprintf(r->task_key, sizeof r->task_key, "conv2d:n=1,ci=%d,h=14,w=14,co=256,kh=3,kw=3,stride=1,pad=1", 64 + task);
    snprintf(r->template_name, sizeof r->template_name, "conv2d_nchwc.cpu");
    snprintf(r->target, sizeof r->target, "cpu");
    r->index = (uint64_t)(i * 7919 % 1000003);
    r->n_choice = 8;
    for (int k = 0; k < 8; k++)
        r->choice[k] = (int32_t)((i >> k) % 7);
    snprintf(r->config, sizeof r->config, "tile_co=[4,16] tile_oh=[2,7] tile_ow=[14,1] unroll=%ld vec=16", i % 4);
    if (i % 5 == 4) {
        Record_setError(r, 4, "wrong answer: element 17 is 0.5, want 0.25");
    } else {
        r->n_costs = 3;
        for (int k = 0; k < 3; k++)
            r->costs[k] = 1e-4 * (1 + (double)(i % 97) / 97) + k * 1e-7;
    }
    r->build_s = 0.15;
    r->run_s = 0.06;
    r->pack_s = 1e-5;
    r->timestamp = 1763791792.0 + (double)i * 0.1;
}

#endif
