/* ui/headless.c: see headless.h. */
#include "ui/headless.h"

#include <math.h>
#include <poll.h>
#include <string.h>

#include "base/clock.h"

#define DRAIN 256

/* " | Roof: 117.5 GFLOPS compute-bound, 41% reached" ("" without a roof); a
 * best above its roof is a warning, never clamped. */
static void roof_text(const TaskRow *row, char *buf, size_t n) {
    buf[0] = '\0';
    if (row->roof_gflops <= 0) return;
    double share = Roof_share(row->best_gflops, row->roof_gflops);
    snprintf(buf, n, " | Roof: %.1f %sGFLOPS %s, %.0f%% reached%s", row->roof_gflops,
             row->effective ? "effective " : "", Roof_boundText(row->roof_bound), 100 * share,
             share > 1 ? " (WARNING: above the roof: the roof or the measurement is wrong)" : "");
}

static void print_progress(FILE *out, Engine *engine, const SessionSnapshot *snap, int t) {
    const TaskRow *row = &snap->rows[t];
    bool done = row->state == TASK_DONE || row->state == TASK_STOPPED;
    char roof[160];
    roof_text(row, roof, sizeof roof);
    fprintf(out, "[Task %2d/%2d]  Current/Best: %8.2f/%8.2f %sGFLOPS | Progress: (%d/%d) | %.2f s%s%s\n", t + 1,
            snap->n_tasks, row->current_gflops, row->best_gflops, row->effective ? "effective " : "", row->trials,
            row->allotted, row->elapsed_s, roof,
            done                         ? (row->state == TASK_STOPPED ? " Stopped." : " Done.")
            : row->state == TASK_AT_ROOF ? " At roof."
                                         : "");
    (void)engine;
}

void Headless_printTable(FILE *out, Engine *engine, const SessionSnapshot *snap) {
    fprintf(out, "----------------------------------------------------------------------  [ Task Scheduler ]\n");
    fprintf(out, "|  ID  | %-30s | Weight | Latency (ms) | Speed (GFLOPS) | Trials | Errors | State    |\n", "Task");
    fprintf(out, "-----------------------------------------------------------------------------------------------"
                 "-------------------\n");
    for (int t = 0; t < snap->n_tasks; t++) {
        const TaskRow *row = &snap->rows[t];
        const Task *task = Engine_task(engine, t);
        char lat[32], speed[32];
        if (isfinite(row->best_latency_s)) {
            snprintf(lat, sizeof lat, "%12.4f", row->best_latency_s * 1e3);
            snprintf(speed, sizeof speed, row->effective ? "%13.2fe" : "%14.2f", row->best_gflops);
        } else {
            snprintf(lat, sizeof lat, "%12s", "-");
            snprintf(speed, sizeof speed, "%14s", "-");
        }
        fprintf(out, "| %4d | %-30.30s | %6g | %s | %s | %6d | %6d | %-8s |\n", t, task->label, task->weight, lat,
                speed, row->trials, row->errors, TaskState_name(row->state));
    }
    fprintf(out, "-----------------------------------------------------------------------------------------------"
                 "-------------------\n");
    bool any_effective = false, any_group = false;
    for (int t = 0; t < snap->n_tasks; t++) {
        any_effective = any_effective || snap->rows[t].effective;
        any_group = any_group || snap->rows[t].group != 0;
    }
    if (any_effective)
        fprintf(out, "(e: effective GFLOPS, the direct convolution's FLOPs over the time: Winograd does fewer)\n");
    if (any_group)
        fprintf(out, "(a workload tuned under two templates counts once in the estimate, with the faster best)\n");
    if (isfinite(snap->est_latency_s))
        fprintf(out, "Estimated total latency: %.3f ms", snap->est_latency_s * 1e3);
    else
        fprintf(out, "Estimated total latency: - ms");
    if (snap->roof_latency_s > 0) fprintf(out, " (at the roofline: %.3f ms)", snap->roof_latency_s * 1e3);
    if (snap->next_task >= 0)
        fprintf(out, "  Trials: %d  Used time: %.0f s  Next ID: %d\n", snap->trials, snap->elapsed_s, snap->next_task);
    else /* nothing left to schedule */
        fprintf(out, "  Trials: %d  Used time: %.0f s  Next ID: -\n", snap->trials, snap->elapsed_s);
    /* a session over MPI ranks: its measure servers under the table */
    if (Engine_config(engine)->backend) Headless_printDevices(out, engine);
    fflush(out);
}

void Headless_printDevices(FILE *out, Engine *engine) {
    DeviceRow rows[64];
    int n = Engine_devices(engine, rows, 64);
    fprintf(out, "----------------------------------------------------------------------  [ Devices ]\n");
    fprintf(out, "| Rank | %-12s | %-32s | State     | Cand/s | Measured | Errors | Heard  |\n", "Host", "Device");
    for (int i = 0; i < n; i++) {
        const DeviceRow *d = &rows[i];
        fprintf(out, "| %4d | %-12.12s | %-32.32s | %-9s | %6.2f | %8d | %6d | %4.0fs |\n", d->rank, d->host, d->device,
                DeviceState_name(d->state), d->cand_per_s, d->measured, d->errors, d->last_heard_s);
    }
}

int Headless_run(Engine *engine, FILE *out, volatile int *stop_flag, double table_every_s) {
    EngineEvent evs[DRAIN];
    double last_table = clock_mono();
    bool stop_sent = false, finished = false;
    struct pollfd pfd = {.fd = Engine_eventFd(engine), .events = POLLIN};
    /* the restored trials are in the table's counts already; their records are not needed here */
    ResumeTrial *restored = NULL;
    ResumeTrials_free(restored, Engine_takeRestored(engine, &restored));
    while (!finished) {
        poll(&pfd, 1, 200);
        if (*stop_flag && !stop_sent) {
            stop_sent = true;
            Engine_requestStop(engine);
            fprintf(out, "stopping: the measurement in flight finishes, the rest of the batch is dropped...\n");
            fflush(out);
        }
        bool engine_done = Engine_finished(engine) || Engine_stopOverdue(engine);
        int k;
        while ((k = Engine_drainEvents(engine, evs, DRAIN)) > 0) {
            SessionSnapshot snap = {0};
            for (int i = 0; i < k; i++) {
                EngineEvent *ev = &evs[i];
                switch (ev->kind) {
                case EV_ROUND:
                    if (!snap.rows) Engine_snapshot(engine, &snap);
                    if (ev->task_id >= 0 && ev->task_id < snap.n_tasks) print_progress(out, engine, &snap, ev->task_id);
                    break;
                case EV_STRATEGY:
                    /* what the task's search strategy says about itself (cost model status) */
                    if (!snap.rows) Engine_snapshot(engine, &snap);
                    if (ev->task_id >= 0 && ev->task_id < snap.n_tasks)
                        fprintf(out, "[Task %2d/%2d]  %s\n", ev->task_id + 1, snap.n_tasks, ev->text);
                    break;
                case EV_LOG:
                    fprintf(out, "%s%s\n",
                            ev->level == LOG_ERROR  ? "error: "
                            : ev->level == LOG_WARN ? "warning: "
                                                    : "",
                            ev->text);
                    break;
                case EV_FINISHED:
                    finished = true;
                    break;
                default:
                    break;
                }
                EngineEvent_done(ev);
            }
            SessionSnapshot_done(&snap);
            fflush(out);
        }
        /* every event but the last was queued before the engine said it finished: once
         * they are drained, the end is known even when a full queue dropped EV_FINISHED */
        if (engine_done) finished = true;
        if (!finished && table_every_s > 0 && clock_mono() - last_table >= table_every_s) {
            last_table = clock_mono();
            SessionSnapshot snap;
            Engine_snapshot(engine, &snap);
            Headless_printTable(out, engine, &snap);
            SessionSnapshot_done(&snap);
        }
    }
    SessionSnapshot snap;
    Engine_snapshot(engine, &snap);
    Headless_printTable(out, engine, &snap);
    SessionSnapshot_done(&snap);
    return 0;
}
