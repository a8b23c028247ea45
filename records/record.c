/* records/record.c: the Record value (lifetime, copies, derived numbers). */
#include "records/record.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

void Record_init(Record *this) {
    memset(this, 0, sizeof *this);
    this->regs = -1;
    this->spills = -1;
    this->shared_bytes = -1;
    this->local_bytes = -1;
    this->rank = -1;
}

void Record_done(Record *this) {
    free(this->error_msg);
    this->error_msg = NULL;
    free(this->steps);
    this->steps = NULL;
}

void Record_copy(Record *dst, const Record *src) {
    free(dst->error_msg);
    free(dst->steps);
    *dst = *src;
    dst->error_msg = src->error_msg ? tt_strdup(src->error_msg) : NULL;
    dst->steps = src->steps ? tt_strdup(src->steps) : NULL;
}

void Record_setError(Record *this, int error_no, const char *msg) {
    this->error_no = error_no;
    free(this->error_msg);
    this->error_msg = msg ? tt_strdup(msg) : NULL;
}

double Record_cost(const Record *this) {
    int n = this->n_costs < REC_MAX_COSTS ? this->n_costs : REC_MAX_COSTS;
    if (this->error_no != 0 || n <= 0) return INFINITY;
    double c[REC_MAX_COSTS];
    memcpy(c, this->costs, sizeof(double) * (size_t)n);
    for (int i = 1; i < n; i++) /* insertion sort: a handful of repeats */
        for (int j = i; j > 0 && c[j] < c[j - 1]; j--) {
            double t = c[j];
            c[j] = c[j - 1];
            c[j - 1] = t;
        }
    return n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
}

double Record_gflops(const Record *this, double flops) {
    double m = Record_cost(this);
    return isfinite(m) && m > 0 ? flops / m / 1e9 : 0.0;
}

bool Record_sameTask(const char *key, const char *tmpl, const char *key2, const char *tmpl2) {
    return strcmp(key, key2) == 0 && (!tmpl || !tmpl[0] || !tmpl2 || !tmpl2[0] || strcmp(tmpl, tmpl2) == 0);
}
