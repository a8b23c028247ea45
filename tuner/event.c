/* tuner/event.c: see event.h. */
#include "tuner/event.h"

#include <math.h>
#include <stdlib.h>

static const char *const STATE_NAMES[] = {"queued", "tuning", "waiting", "paused", "done", "stopped", "at roof"};

const char *TaskState_name(TaskState s) { return s >= TASK_QUEUED && s <= TASK_AT_ROOF ? STATE_NAMES[s] : "?"; }

void EngineEvent_done(EngineEvent *this) {
    if (this->record) {
        Record_done(this->record);
        free(this->record);
        this->record = NULL;
    }
}

void LatencyEstimate_init(LatencyEstimate *this) { *this = (LatencyEstimate){0}; }

void LatencyEstimate_add(LatencyEstimate *this, double weight, double best_latency_s, bool closed) {
    this->tasks++;
    if (isfinite(best_latency_s) && best_latency_s > 0)
        this->sum += weight * best_latency_s;
    else if (closed)
        this->left_out++;
    else
        this->open_without = true;
}

double LatencyEstimate_value(const LatencyEstimate *this, int *left_out) {
    if (left_out) *left_out = this->left_out;
    return this->open_without || this->left_out == this->tasks ? INFINITY : this->sum;
}
