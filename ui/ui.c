/* ui/ui.c: the main loops of the terminal UI (see ui.h).
 *
 * One thread: poll() waits on stdin and the engine's event descriptor with a
 * timeout that keeps a steady ~10 frames per second, events are drained into
 * the model (the engine never waits on the UI), keys run actions from the
 * key table, and a frame is rendered into a cell buffer and blitted. */
#include "ui/ui.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "kernels/targets/peak.h"
#include "records/log.h"
#include "space/space.h"
#include "ui/crt.h"
#include "ui/keys.h"
#include "ui/logview.h"
#include "ui/state.h"
#include "ui/widgets.h"

void UiOptions_defaults(UiOptions *this) {
    memset(this, 0, sizeof *this);
    const char *nc = getenv("NO_COLOR");
    this->color = !(nc && nc[0]);
    this->refresh_hz = 10;
    this->target = NULL;
}

/* ---- steering through the engine ----------------------------------------- */

static bool steer_pause(void *ctx, int id, bool paused) { return Engine_pause(ctx, id, paused); }
static bool steer_pause_all(void *ctx, bool paused) { return Engine_pauseAll(ctx, paused); }
static bool steer_priority(void *ctx, int id, int p) { return Engine_setPriority(ctx, id, p); }
static bool steer_stop_task(void *ctx, int id) { return Engine_stopTask(ctx, id); }
static void steer_stop(void *ctx) { Engine_requestStop(ctx); }

static const UiSteer ENGINE_STEER = {steer_pause, steer_pause_all, steer_priority, steer_stop_task, steer_stop};

/* ---- events --------------------------------------------------------------- */

/* A result's trial goes into the curves and error groups; the task's row
 * (state, counts, best) comes from the engine's snapshot at every frame. */
static void add_trial(UiState *st, int task_id, int trial, double timestamp, double gflops, int error_no,
                      const Record *failure, bool best) {
    UiModel *m = &st->model;
    int ti = UiModel_findId(m, task_id);
    if (ti < 0) return;
    UiModel_addTrial(m, ti, trial, timestamp, gflops, error_no, failure);
    char why[256];
    /* against the peak: the GFLOPS executed (a Winograd task's effective GFLOPS are more) */
    const Task *t = m->tasks[ti].task;
    double executed = t ? Template_executedGflops(t->tmpl, &t->wl, gflops) : gflops;
    if (best && st->have_dev && Device_beyondPeak(&st->dev, executed, why, sizeof why))
        UiState_setStatus(st, ATTR_WARN, "task %d best: %s", task_id, why);
}

static void apply_event(UiState *st, EngineEvent *ev) {
    UiModel *m = &st->model;
    int ti = UiModel_findId(m, ev->task_id);
    switch (ev->kind) {
    case EV_RESULT:
        if (ev->record)
            add_trial(st, ev->task_id, ev->trial, ev->record->timestamp, ev->gflops, ev->record->error_no, ev->record,
                      ev->best);
        /* the best candidate's record, for its page (b) */
        if (ev->record && ev->best && !ev->record->error_no && ti >= 0) Record_copy(&m->tasks[ti].best, ev->record);
        break;
    case EV_TASK_STATE: /* the row shows it from the next snapshot */
        break;
    case EV_LOG:
        UiState_setStatus(st,
                          ev->level == LOG_ERROR  ? ATTR_FAILED
                          : ev->level == LOG_WARN ? ATTR_WARN
                                                  : ATTR_NORMAL,
                          "%s", ev->text);
        break;
    case EV_ROUND:
        UiModel_addLatency(m, ev->time_s + m->latency_offset, ev->est_latency_s);
        break;
    case EV_STRATEGY:
        if (ti >= 0) snprintf(m->tasks[ti].strategy, sizeof m->tasks[ti].strategy, "%s", ev->text);
        break;
    case EV_FINISHED:
        m->finished = true;
        if (!st->stopping) UiState_setStatus(st, ATTR_BEST, "session finished: %s -- press q to quit", ev->text);
        break;
    }
    EngineEvent_done(ev);
}

static int drain(Engine *engine, UiState *st) {
    EngineEvent evs[64];
    int total = 0, n;
    do {
        n = Engine_drainEvents(engine, evs, 64);
        for (int i = 0; i < n; i++)
            apply_event(st, &evs[i]);
        total += n;
    } while (n == 64 && total < 4096); /* bounded: keys and frames must not starve */
    return total;
}

/* ---- the frame ------------------------------------------------------------ */

static void draw(CellBuf *cb, UiState *st) {
    int rows, cols;
    CRT_size(&rows, &cols);
    if (rows != cb->h || cols != cb->w) CellBuf_resize(cb, cols, rows);
    Screen_render(cb, st);
    CRT_blit(cb);
}

/* Writes "ui thread cpu ..." to $TT_UI_STATS (for measuring the UI's cost). */
static void write_stats(double wall0, double cpu0, long frames) {
    const char *path = getenv("TT_UI_STATS");
    if (!path || !path[0]) return;
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    double cpu = ts.tv_sec + ts.tv_nsec * 1e-9 - cpu0, wall = clock_mono() - wall0;
    FILE *f = fopen(path, "a");
    if (!f) return;
    fprintf(f, "ui thread cpu %.3f s over %.1f s wall (%.2f%% of one core), %ld frames\n", cpu, wall,
            wall > 0 ? 100 * cpu / wall : 0, frames);
    fclose(f);
}

static double thread_cpu(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct Loop {
    UiState *st;
    Engine *engine;  /* live session, or NULL */
    UiLogView *view; /* log view, or NULL */
    const UiOptions *opt;
    volatile int *stop_flag;
} Loop;

static int run_loop(Loop *L) {
    UiState *st = L->st;
    double period = 1.0 / (L->opt->refresh_hz > 0 ? L->opt->refresh_hz : 10);
    double wall0 = clock_mono(), cpu0 = thread_cpu();
    long frames = 0;
    CellBuf *cb = CellBuf_new(1, 1);
    double next_frame = clock_mono(), next_poll = next_frame;
    bool dirty = true, stdin_ok = true, resort = false;
    int code = 0;
    for (;;) {
        double now = clock_mono();
        int timeout = (int)((next_frame - now) * 1000);
        if (timeout < 0) timeout = 0;
        struct pollfd fds[2] = {{.fd = stdin_ok ? STDIN_FILENO : -1, .events = POLLIN}, {.fd = -1, .events = POLLIN}};
        if (L->engine) fds[1].fd = Engine_eventFd(L->engine);
        int pr = poll(fds, 2, dirty ? 0 : timeout);
        if (pr < 0 && errno != EINTR) break;
        bool hangup = stdin_ok && pr > 0 && (fds[0].revents & (POLLHUP | POLLERR | POLLNVAL));
        if (hangup) stdin_ok = false; /* the terminal is gone: stop polling it (no busy loop) */
        if (L->engine && drain(L->engine, st) > 0) resort = true; /* rows change with the next snapshot */
        /* keys */
        int key, react = 0;
        while ((key = CRT_readKey()) >= 0) {
            if (key == UI_KEY_RESIZE) {
                react |= REACT_RELAYOUT | REACT_REDRAW;
                continue;
            }
            if (key == UI_KEY_MOUSE && !CRT_mouse(&st->mouse_x, &st->mouse_y, &st->mouse_button)) continue;
            react |= UiKeys_handle(st, key);
            if (react & REACT_QUIT) break;
        }
        if (((L->stop_flag && *L->stop_flag) || CRT_interrupted() || !stdin_ok) && !st->quit_requested) {
            /* Ctrl-C / SIGTERM / hang-up: the same graceful path as q */
            st->view.overlay = OVERLAY_NONE;
            react |= UiKeys_quitNow(st);
        }
        if (react & REACT_QUIT) break;
        if (st->stopping && L->engine && (Engine_finished(L->engine) || Engine_stopOverdue(L->engine))) break;
        if (react) dirty = true;
        now = clock_mono();
        if (L->view && !L->opt->no_follow && now >= next_poll) {
            char err[TT_ERRLEN];
            int n = UiLogView_poll(L->view, st, err);
            if (n < 0)
                UiState_setStatus(st, ATTR_FAILED, "%s", err);
            else if (L->view->change == LOG_FILE_TRUNCATED || L->view->change == LOG_FILE_REPLACED)
                UiState_setStatus(st, ATTR_WARN, "%s was %s: read again from its start (%ld records)", L->view->path,
                                  L->view->change == LOG_FILE_REPLACED ? "replaced by another file" : "cut short",
                                  L->view->records);
            else if (n > 0)
                UiState_setStatus(st, ATTR_NORMAL, "log grew: %d new record%s", n, n == 1 ? "" : "s");
            else if (L->view->torn && L->view->tvm)
                UiState_setStatus(st, ATTR_WARN, "waiting for the rest of the last line (a writer is busy)");
            next_poll = now + 0.5;
        }
        if (now >= next_frame || dirty) {
            if (L->engine) {
                uint64_t dropped = Engine_droppedEvents(L->engine);
                if (dropped > st->model.dropped_events) {
                    st->model.dropped_events = dropped;
                    UiState_setStatus(st, ATTR_WARN,
                                      "%llu events dropped (UI too slow?): table exact, curves miss points",
                                      (unsigned long long)dropped);
                }
                SessionSnapshot snap;
                Engine_snapshot(L->engine, &snap);
                UiModel_applySnapshot(&st->model, &snap);
                SessionSnapshot_done(&snap);
                st->n_devices = Engine_devices(L->engine, st->devices, UI_MAX_DEVICES);
                if (resort) UiState_sort(st);
                resort = false;
            }
            UiState_expireStatus(st, clock_wall());
            draw(cb, st);
            frames++;
            dirty = false;
            if (now >= next_frame) {
                next_frame += period;
                if (next_frame < now) next_frame = now + period; /* fell behind: do not burst */
            }
        }
    }
    CellBuf_delete(cb);
    write_stats(wall0, cpu0, frames);
    return code;
}

/* A resumed session: the trials the engine restored from the log go into
 * the model first (they precede every EV_RESULT), so the curves and the
 * error inspector cover the whole history. */
static void add_restored(UiState *st, Engine *engine) {
    ResumeTrial *trials = NULL;
    int n = Engine_takeRestored(engine, &trials);
    for (int i = 0; i < n; i++) {
        const ResumeTrial *t = &trials[i];
        add_trial(st, t->task, t->trial, t->timestamp, t->gflops, t->error_no, t->failure, false); /* warned before */
        int ti = UiModel_findId(&st->model, t->task);
        if (t->best_record && ti >= 0) Record_copy(&st->model.tasks[ti].best, t->best_record);
    }
    ResumeTrials_free(trials, n);
}

int Ui_runSession(Engine *engine, const UiOptions *opt, volatile int *stop_flag) {
    UiOptions defaults;
    if (!opt) {
        UiOptions_defaults(&defaults);
        opt = &defaults;
    }
    UiState st;
    UiState_init(&st);
    const EngineConfig *cfg = Engine_config(engine);
    UiModel *m = &st.model;
    m->live = true;
    snprintf(m->target, sizeof m->target, "%s", cfg->target ? cfg->target->name : "?");
    snprintf(m->device, sizeof m->device, "%s", cfg->dev.name);
    snprintf(m->tuner, sizeof m->tuner, "%s", cfg->strategy ? cfg->strategy : "");
    m->budget = cfg->trials;
    st.dev = cfg->dev;
    st.have_dev = true;
    st.dialect = cfg->target ? cfg->target->dialect : DIALECT_C;
    for (int i = 0; i < Engine_taskCount(engine); i++) {
        const Task *t = Engine_task(engine, i);
        int ti = UiModel_addTask(m, t->id, t->key, t->label, t->flops, t->weight, t);
        snprintf(m->tasks[ti].template_name, sizeof m->tasks[ti].template_name, "%s", t->tmpl->name);
    }
    UiState_sort(&st);
    st.steer = &ENGINE_STEER;
    st.steer_ctx = engine;
    char err[256];
    if (!CRT_init(opt->color, &st.utf8, err, sizeof err)) {
        fprintf(stderr, "tunetop: %s\n", err);
        UiState_done(&st);
        return 1;
    }
    Loop L = {&st, engine, NULL, opt, stop_flag};
    add_restored(&st, engine);
    SessionSnapshot snap;
    Engine_snapshot(engine, &snap);
    if (snap.restored > 0 && !(opt->notice && opt->notice[0]))
        UiState_setStatus(&st, ATTR_NORMAL, "%d records restored from %s (curves include them)", snap.restored,
                          cfg->log_path);
    if (opt->notice && opt->notice[0]) {
        /* what was restored; the steering last, so the status line shows it (m lists both) */
        const char *steer = strstr(opt->notice, "; steering restored: ");
        if (steer) {
            UiState_setStatus(&st, ATTR_NORMAL, "%.*s", (int)(steer - opt->notice), opt->notice);
            UiState_setStatus(&st, ATTR_WARN, "%s", steer + 2);
        } else {
            UiState_setStatus(&st, ATTR_NORMAL, "%s", opt->notice);
        }
    }
    /* the latency curve goes on from the earlier sessions of the log */
    char tsv[1100];
    snprintf(tsv, sizeof tsv, "%s.tsv", cfg->log_path);
    UiModel_loadLatencyTsv(m, tsv, clock_wall() - snap.elapsed_s);
    SessionSnapshot_done(&snap);
    int code = run_loop(&L);
    CRT_done();
    UiState_done(&st);
    return code;
}

int Ui_runView(const char *log_path, const UiOptions *opt, volatile int *stop_flag) {
    UiOptions defaults;
    if (!opt) {
        UiOptions_defaults(&defaults);
        opt = &defaults;
    }
    UiState st;
    UiState_init(&st);
    UiLogView view;
    char err[TT_ERRLEN];
    if (UiLogView_openTasks(&view, &st, log_path, (TvmFormat)opt->log_format, opt->tasks, err) != TT_OK) {
        fprintf(stderr, "tunetop view: %s\n", err);
        UiLogView_done(&view);
        UiState_done(&st);
        return 1;
    }
    if (view.note[0])
        UiState_setStatus(&st, ATTR_WARN, "%s", view.note);
    else if (view.torn)
        UiState_setStatus(&st, ATTR_WARN, "the log ends inside a record (a writer is busy, or it crashed)");
    else
        UiState_setStatus(&st, ATTR_NORMAL, "%ld records from %s (read-only; %s)", view.records, log_path,
                          opt->no_follow ? "read once" : "follows the file as it grows");
    char cerr[256];
    if (!CRT_init(opt->color, &st.utf8, cerr, sizeof cerr)) {
        if (opt->tasks && opt->tasks->network[0])
            fprintf(stderr, "tunetop view: %s (for text: tunetop best --model %s LOG)\n", cerr, opt->tasks->network);
        else
            fprintf(stderr, "tunetop view: %s (for text: tunetop best LOG, tunetop dump LOG)\n", cerr);
        UiLogView_done(&view);
        UiState_done(&st);
        return 1;
    }
    Loop L = {&st, NULL, &view, opt, stop_flag};
    int code = run_loop(&L);
    CRT_done();
    UiState_done(&st); /* before the view: the model points at the view's tasks */
    UiLogView_done(&view);
    return code;
}
