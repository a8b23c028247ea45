/* tuner/engine.c: the session engine (see engine.h).
 *
 * One engine thread makes every decision: it applies steering commands, asks
 * the task scheduler for a task, asks that task's strategy for a batch,
 * rejects what the template's precheck rejects, hands the rest to the builder
 * pool and waits for the whole batch to be built, then measures the built
 * kernels one by one in the runner's isolated worker (so no compile ever runs
 * while a kernel is timed), and records every result: one log write per
 * record, one fsync per batch, one event per record for the observers.
 * With a measure backend (MPI ranks) the rounds are not taken in turn: the
 * engine keeps the backend's free slots filled with the next rounds and
 * records results in completion order (engine_async).
 */
#include "tuner/engine.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/tmpdir.h"
#include "records/log.h"
#include "tuner/builder.h"
#include "tuner/eventq.h"
#include "tuner/resume.h"
#include "tuner/scheduler.h"
#include "tuner/search/strategy.h"

#define EVENT_QUEUE_CAP 8192
#define MAX_COMMANDS ENGINE_MAX_COMMANDS
/* A candidate whose first repeat is this many times slower than the task's
 * best is not repeated: it cannot win, and repeats of a slow kernel are where
 * a session's time goes. */
#define SLOW_FACTOR 10
/* Jobs per builder thread built before the runner measures them. */
#define CHUNK_PER_BUILDER 4

typedef enum { CMD_PAUSE, CMD_PAUSE_ALL, CMD_PRIORITY, CMD_STOP_TASK } CommandKind;

typedef struct Command {
    CommandKind kind;
    int task;
    int value;
} Command;

typedef struct TaskRun {
    const Strategy *strat;
    void *strategy;
    StrategyContext ctx;
    VisitedSet visited;
    /* table fields, guarded by Engine.state_lock for readers */
    TaskState state;
    int priority;
    TaskTally tally;
    double started, spent;
    /* engine-thread only */
    int since_improve;
    /* Proposed (so in visited) but dropped by a pause or stop mid-round:
     * offered again before anything new is proposed. */
    uint64_t *pending;
    int n_pending, cap_pending;
    int rounds;
    int busy;          /* rounds in flight (more than one only with a backend) */
    double busy_since; /* clock_mono when the first of them started */
    bool paused, stopped, done;
    bool warned_all_failed;
    uint64_t *xfer_index; /* transfer rows (ctx points at them; owned) */
    double *xfer_gflops;
    const Task **xfer_task;
    Roof roof;     /* the task's roofline (gflops 0 = unknown) */
    double roof_s; /* latency at the roof (0 = unknown) */
} TaskRun;

struct Engine {
    EngineConfig cfg;
    char *log_path;
    char *strategy_name;
    char *scheduler_name;
    char workdir[256];
    bool own_workdir;
    int workdir_lock; /* flock held on workdir/.session.lock while the session lives, -1 none */

    Task *tasks;
    TaskRun *runs;
    int n;
    Task *xtasks; /* tasks of earlier sessions found in the log, for --transfer */
    int n_xtasks;
    int batch;
    int first_round; /* trials of a task's first round */

    TaskScheduler *sched;
    LogWriter *log;
    FILE *tsv; /* LOG.tsv: one line per round for plotting */
    BuilderPool *pool;
    Runner *runner;
    int runner_task; /* task the runner is set up for, -1 none */

    EventQueue events;

    pthread_mutex_t cmd_lock;
    pthread_cond_t cmd_cond;
    Command cmds[MAX_COMMANDS];
    int n_cmds;
    atomic_bool stop_requested;
    _Atomic double stop_at;        /* clock_mono() when the first stop was asked for, 0 before */
    bool abandoned;                /* Engine_wait gave up on the engine thread (Engine_abandoned) */
    char machine_fault[TT_ERRLEN]; /* the fault of the machine that stopped the session, "" none */
    int fault_rank;                /* backend: the rank whose machine failed last, -1 none since */
    bool all_paused;               /* P: every task paused on top of their own pauses (engine thread writes) */

    pthread_mutex_t state_lock; /* guards the table fields and the counters below */
    int total_trials;           /* restored + this session */
    int session_trials;
    int restored_trials;
    ResumeTrial *restored; /* restored trials not yet taken by an observer (Engine_takeRestored) */
    int n_restored;
    int next_task;
    atomic_int measuring;
    atomic_bool finished;
    bool stopped_early; /* a stop was requested before the session finished on its own */
    double t0;
    double t_end; /* engine seconds when it finished (the clock stops there); 0 while running */

    pthread_t thread;
    bool started;
    char host[REC_HOST_LEN];  /* where this process runs (records of local measurements) */
    atomic_int measured_here; /* candidates this process built and measured (devices view) */
    atomic_int errors_here;
    LogOutcome logo; /* under state_lock: set once when the log fails */
};

void EngineConfig_defaults(EngineConfig *this) {
    memset(this, 0, sizeof *this);
    MeasureOptions_defaults(&this->measure);
    this->strategy = Strategy_default()->name;
    this->scheduler = TaskScheduler_default();
    this->trials = 1000;
    this->early_stopping = 0;
    this->seed = 1;
    this->roof_stop = 0.9;
    this->evolution = EvolutionOptions_default();
}

void SessionSnapshot_done(SessionSnapshot *this) {
    free(this->rows);
    this->rows = NULL;
}

/* ---- events ---------------------------------------------------------------- */

static double now_s(const Engine *this) { return clock_mono() - this->t0; }

/* A task is paused by its own pause or by a pause of every task. */
static bool is_paused(const Engine *this, const TaskRun *r) { return r->paused || this->all_paused; }

/* The engine thread changes a task's paused/stopped/done flags under state_lock:
 * Engine_snapshot reads them from the UI's thread. */
static void set_flag(Engine *this, bool *flag, bool value) {
    pthread_mutex_lock(&this->state_lock);
    *flag = value;
    pthread_mutex_unlock(&this->state_lock);
}

static void emit(Engine *this, EngineEvent *ev) {
    ev->time_s = now_s(this);
    EventQueue_push(&this->events, ev);
}

static void emit_log(Engine *this, LogLevel level, int task, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void emit_log(Engine *this, LogLevel level, int task, const char *fmt, ...) {
    EngineEvent ev = {.kind = EV_LOG, .level = level, .task_id = task};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ev.text, sizeof ev.text, fmt, ap);
    va_end(ap);
    emit(this, &ev);
}

static void emit_state(Engine *this, int task) {
    EngineEvent ev = {.kind = EV_TASK_STATE, .task_id = task};
    pthread_mutex_lock(&this->state_lock);
    ev.state = this->runs[task].state;
    ev.priority = this->runs[task].priority;
    pthread_mutex_unlock(&this->state_lock);
    emit(this, &ev);
}

static void set_state(Engine *this, int task, TaskState s) {
    pthread_mutex_lock(&this->state_lock);
    bool changed = this->runs[task].state != s;
    this->runs[task].state = s;
    pthread_mutex_unlock(&this->state_lock);
    if (changed) emit_state(this, task);
}

/* ---- life ------------------------------------------------------------------ */

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

Engine *Engine_new(const EngineConfig *cfg, Task *tasks, int n, char *err) {
    if (n <= 0) {
        tt_fail(err, "no tasks to tune");
        return NULL;
    }
    if (!cfg->target) {
        tt_fail(err, "no target");
        return NULL;
    }
    if (!cfg->log_path) {
        tt_fail(err, "no record log given (--log FILE)");
        return NULL;
    }
    const Strategy *strat = (cfg->strategy ? Strategy_find(cfg->strategy) : Strategy_default());
    if (!strat) {
        tt_fail(err, "unknown tuner '%s' (choose from: %s)", cfg->strategy, Strategy_names());
        return NULL;
    }
    for (int i = 0; i < n; i++)
        if (tasks[i].tmpl->strategy && !Strategy_find(tasks[i].tmpl->strategy)) {
            tt_fail(err, "task %d: template %s names an unknown tuner %s", i, tasks[i].tmpl->name,
                    tasks[i].tmpl->strategy);
            return NULL;
        }
    Engine *this = calloc(1, sizeof *this);
    if (this) this->workdir_lock = -1; /* Engine_delete may run before the work directory exists */
    if (!this) abort();
    this->cfg = *cfg;
    this->log_path = strdup(cfg->log_path);
    this->strategy_name = strdup(strat->name);
    this->scheduler_name = dup_or_null(cfg->scheduler ? cfg->scheduler : TaskScheduler_default());
    this->cfg.log_path = this->log_path;
    this->cfg.strategy = this->strategy_name;
    this->cfg.scheduler = this->scheduler_name;
    this->cfg.workdir = NULL;
    this->tasks = tasks;
    this->n = n;
    int per_task = cfg->trials / n;
    this->batch = cfg->batch > 0 ? cfg->batch : (per_task < 64 ? (per_task < 1 ? 1 : per_task) : 64);
    /* every task's first round together takes at most a quarter of the budget */
    this->first_round = cfg->trials / (4 * n);
    if (this->first_round < 1) this->first_round = 1;
    if (this->first_round > this->batch) this->first_round = this->batch;
    this->runs = calloc((size_t)n, sizeof(TaskRun));
    if (!this->runs) abort();
    for (int i = 0; i < n; i++) {
        TaskRun *r = &this->runs[i];
        /* a template may name the one strategy that searches its space (te.sketch: evolution) */
        r->strat = tasks[i].tmpl->strategy ? Strategy_find(tasks[i].tmpl->strategy) : strat;
        TaskTally_init(&r->tally);
        r->started = -1;
        r->state = TASK_QUEUED;
        VisitedSet_init(&r->visited);
        if (cfg->have_machine) {
            r->roof = Task_roof(&tasks[i], &cfg->machine, cfg->measure.threads);
            r->roof_s = Roof_latency(tasks[i].flops, r->roof.gflops);
        }
    }
    this->runner_task = -1;
    this->next_task = -1;
    EventQueue_init(&this->events, cfg->event_queue > 0 ? cfg->event_queue : EVENT_QUEUE_CAP);
    pthread_mutex_init(&this->cmd_lock, NULL);
    pthread_cond_init(&this->cmd_cond, NULL);
    pthread_mutex_init(&this->state_lock, NULL);
    this->fault_rank = -1;
    this->sched = TaskScheduler_new(this->scheduler_name, n, err);
    if (!this->sched) {
        Engine_delete(this);
        return NULL;
    }
    TaskScheduler_setRoofStop(this->sched, cfg->roof_stop);
    if (cfg->workdir) {
        snprintf(this->workdir, sizeof this->workdir, "%s", cfg->workdir);
    } else {
        const char *tmp = getenv("TMPDIR");
        TmpDir_sweepStale(TmpDir_root()); /* the folders of sessions that died (kill -9, a crash) */
        snprintf(this->workdir, sizeof this->workdir, "%s/tunetop-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(this->workdir)) {
            tt_fail(err, "cannot create a work directory in %s: %s", tmp && *tmp ? tmp : "/tmp", strerror(errno));
            this->workdir[0] = '\0';
            Engine_delete(this);
            return NULL;
        }
        this->own_workdir = true;
        this->workdir_lock = TmpDir_lock(this->workdir);
    }
    this->cfg.workdir = this->workdir;
    if (gethostname(this->host, sizeof this->host) != 0) snprintf(this->host, sizeof this->host, "?");
    this->host[sizeof this->host - 1] = '\0';
    return this;
}

int Engine_taskCount(const Engine *this) { return this->n; }
const Task *Engine_task(const Engine *this, int id) { return id >= 0 && id < this->n ? &this->tasks[id] : NULL; }
const EngineConfig *Engine_config(const Engine *this) { return &this->cfg; }

/* ---- resume ------------------------------------------------------------------ */

/* Adds one result to a task's table fields; returns true when it is a new best. */
static bool account(Engine *this, int t, const Record *rec, double gflops) {
    pthread_mutex_lock(&this->state_lock);
    bool improved = TaskTally_add(&this->runs[t].tally, rec, gflops);
    pthread_mutex_unlock(&this->state_lock);
    return improved;
}

/* Hands task t's results to the strategies of the session's other tasks of
 * the same template (unless cfg.isolate). */
static void share_results(Engine *this, int t, const uint64_t *index, const double *gflops, int n) {
    if (this->cfg.isolate) return;
    for (int o = 0; o < this->n; o++) {
        TaskRun *r = &this->runs[o];
        if (o == t || !r->strategy || !r->strat->learn_other || this->tasks[o].tmpl != this->tasks[t].tmpl) continue;
        r->strat->learn_other(r->strategy, &this->tasks[t], index, gflops, n);
    }
}

static void push_pending(TaskRun *r, uint64_t index);

/* Reads the (already validated and torn-tail-truncated) log (tuner/resume.h)
 * and applies what it restored: visited sets, tallies, steering, imported
 * configs to measure first, transfer rows, the strategies' knowledge (warm
 * start) and the scheduler's rounds. The restored trials are kept for the
 * observers (Engine_takeRestored). */
static Status restore(Engine *this, char *summary, size_t summary_len, char *err) {
    Resume res;
    if (Resume_read(&res, this->log_path, this->tasks, this->n, this->batch, this->cfg.transfer,
                    this->cfg.target->family, &this->cfg.dev, err) != TT_OK) {
        Resume_done(&res);
        return TT_ERR;
    }
    if (res.torn_at >= 0) {
        /* LogWriter_open already truncated a torn tail, so this only happens
         * if the file changed under us. */
        Resume_done(&res);
        return tt_fail(err, "%s: the log ends inside a record at byte %lld", this->log_path, (long long)res.torn_at);
    }
    for (int t = 0; t < this->n; t++) {
        TaskRun *r = &this->runs[t];
        ResumeTask *rt = &res.tasks[t];
        VisitedSet_done(&r->visited);
        r->visited = rt->visited;
        memset(&rt->visited, 0, sizeof rt->visited);
        r->tally = rt->tally;
        for (int i = 0; i < rt->n_seeds; i++)
            push_pending(r, rt->seeds[i]);
        if (rt->steered) { /* what the user left: pause, priority, stop */
            set_flag(this, &r->paused, rt->paused);
            set_flag(this, &r->stopped, rt->stopped);
            r->priority = rt->priority;
        }
        if (r->tally.trials > 0) {
            r->rounds = rt->rounds;
            r->state = TASK_WAITING;
            r->started = 0;
            TaskScheduler_restore(this->sched, t, r->rounds, r->tally.best_latency);
            if (r->visited.count >= this->tasks[t].space.total) {
                set_flag(this, &r->done, true);
                r->state = TASK_DONE;
            }
        }
        if (r->stopped && !r->done)
            r->state = TASK_STOPPED;
        else if (r->paused && !r->done)
            r->state = TASK_PAUSED;
        r->ctx.task = &this->tasks[t];
        r->ctx.dev = &this->cfg.dev;
        r->ctx.plan_size = this->batch;
        r->ctx.evolution = this->cfg.evolution;
        r->ctx.threads = this->cfg.measure.threads;
        /* --transfer: the records of earlier sessions' tasks of the same template */
        r->xfer_index = rt->xfer_index;
        r->xfer_gflops = rt->xfer_gflops;
        r->xfer_task = rt->xfer_task;
        r->ctx.n_transfer = rt->n_xfer;
        r->ctx.transfer_index = r->xfer_index;
        r->ctx.transfer_gflops = r->xfer_gflops;
        r->ctx.transfer_task = r->xfer_task;
        rt->xfer_index = NULL;
        rt->xfer_gflops = NULL;
        rt->xfer_task = NULL;
        rt->n_xfer = 0;
    }
    this->xtasks = res.xtasks;
    this->n_xtasks = res.n_xtasks;
    res.xtasks = NULL;
    res.n_xtasks = 0;
    /* Strategies: create, then replay what the log knows (warm start); this
     * session's tasks of a template learn from each other's records too. */
    Status ok = TT_OK;
    for (int t = 0; t < this->n && ok == TT_OK; t++) {
        TaskRun *r = &this->runs[t];
        const ResumeTask *rt = &res.tasks[t];
        char why[TT_ERRLEN] = "";
        r->strategy = r->strat->create(&r->ctx, this->cfg.seed + (uint64_t)t * 7919, why);
        if (!r->strategy) {
            ok = tt_fail(err, "tuner %s for task %d: %s", r->strat->name, t, why);
            break;
        }
        if (rt->replay.n) r->strat->update(r->strategy, rt->replay.index, rt->replay.gflops, rt->replay.n);
    }
    for (int t = 0; t < this->n && ok == TT_OK; t++)
        if (res.tasks[t].replay.n)
            share_results(this, t, res.tasks[t].replay.index, res.tasks[t].replay.gflops, res.tasks[t].replay.n);
    if (ok == TT_OK) {
        Resume_summary(&res, this->log_path, summary, summary_len);
        this->restored_trials = res.restored;
        this->total_trials = res.restored;
        this->restored = res.trials;
        this->n_restored = res.n_trials;
        res.trials = NULL;
        res.n_trials = 0;
    }
    Resume_done(&res);
    return ok;
}

/* ---- the engine thread -------------------------------------------------------- */

static void log_failed(Engine *this, int t, const char *why);

/* Writes task t's steering state to the log, for a resumed session to restore. */
static void record_steer(Engine *this, int t) {
    TaskRun *r = &this->runs[t];
    LogSteer ls = {.timestamp = clock_wall(), .paused = r->paused, .stopped = r->stopped, .priority = r->priority};
    snprintf(ls.key, sizeof ls.key, "%s", this->tasks[t].key);
    snprintf(ls.template_name, sizeof ls.template_name, "%s", this->tasks[t].tmpl->name);
    char err[TT_ERRLEN];
    if (LogWriter_appendSteer(this->log, &ls, err) != TT_OK) log_failed(this, t, err);
}

/* The state a task that is neither done nor stopped shows now. */
static TaskState idle_state(const Engine *this, const TaskRun *r) {
    return is_paused(this, r) ? TASK_PAUSED : r->tally.trials ? TASK_WAITING : TASK_QUEUED;
}

/* Tasks t and u are the same task or alternatives of one group (tuner/task.h). */
static bool same_group(const Engine *this, int t, int u) {
    return t == u || (this->tasks[t].group != 0 && this->tasks[t].group == this->tasks[u].group);
}

/* Task t is the first of its group (or alone): the one that counts the group. */
static bool group_first(const Engine *this, int t) {
    for (int u = 0; u < t; u++)
        if (same_group(this, t, u)) return false;
    return true;
}

static SchedTaskState sched_state(const Engine *this, int t) {
    const TaskRun *r = &this->runs[t];
    const Template *const *all;
    int n_all = Template_all(&all), tmpl = 0;
    for (int k = 0; k < n_all; k++)
        if (all[k] == this->tasks[t].tmpl) tmpl = k;
    return (SchedTaskState){.weight = this->tasks[t].weight,
                            .flops = this->tasks[t].flops,
                            .op = this->tasks[t].wl.op,
                            .paused = is_paused(this, r),
                            .done = r->done || r->stopped,
                            .priority = r->priority,
                            .roof_s = r->roof_s,
                            .group = this->tasks[t].group,
                            .tmpl = tmpl};
}

/* Every task's scheduler state, into st (n entries). */
static void sched_states(const Engine *this, SchedTaskState *st) {
    for (int t = 0; t < this->n; t++)
        st[t] = sched_state(this, t);
}

/* The state of a task between its rounds: "at roof" when the scheduler's roof
 * stop holds it back (a raised priority lets it go on), else as idle_state. */
static TaskState resting_state(const Engine *this, int t) {
    const TaskRun *r = &this->runs[t];
    if (r->stopped) return TASK_STOPPED;
    if (r->done) return TASK_DONE;
    TaskState s = idle_state(this, r);
    if (s != TASK_WAITING || r->priority > 0) return s;
    SchedTaskState *st = calloc((size_t)this->n, sizeof *st);
    if (!st) abort();
    sched_states(this, st);
    bool at_roof = TaskScheduler_atRoof(this->sched, t, st);
    free(st);
    return at_roof ? TASK_AT_ROOF : TASK_WAITING;
}

static void apply_commands(Engine *this) {
    Command cmds[MAX_COMMANDS];
    pthread_mutex_lock(&this->cmd_lock);
    int n = this->n_cmds;
    memcpy(cmds, this->cmds, (size_t)n * sizeof(Command));
    this->n_cmds = 0;
    pthread_mutex_unlock(&this->cmd_lock);
    for (int i = 0; i < n; i++) {
        Command *c = &cmds[i];
        if (c->kind == CMD_PAUSE_ALL) {
            bool all = c->value != 0;
            if (all == this->all_paused) continue;
            pthread_mutex_lock(&this->state_lock);
            this->all_paused = all;
            pthread_mutex_unlock(&this->state_lock);
            int own = 0;
            for (int t = 0; t < this->n; t++) {
                TaskRun *r = &this->runs[t];
                if (r->done || r->stopped) continue;
                own += r->paused;
                set_state(this, t, resting_state(this, t));
            }
            if (all)
                emit_log(this, LOG_INFO, -1, "all tasks paused (P resumes them)");
            else if (own)
                emit_log(this, LOG_INFO, -1, "all tasks resumed, but %d paused one by one stay%s paused", own,
                         own == 1 ? "s" : "");
            else
                emit_log(this, LOG_INFO, -1, "all tasks resumed");
            continue;
        }
        int t = c->task;
        if (t < 0 || t >= this->n) continue;
        TaskRun *r = &this->runs[t];
        switch (c->kind) {
        case CMD_PAUSE:
            if (r->done || r->stopped || r->paused == (c->value != 0)) break;
            set_flag(this, &r->paused, c->value != 0);
            set_state(this, t, resting_state(this, t));
            record_steer(this, t);
            if (this->all_paused)
                emit_log(this, LOG_INFO, t, "task %d %s (all tasks are paused now: P resumes them)", t,
                         r->paused ? "paused" : "will resume");
            else
                emit_log(this, LOG_INFO, t, "task %d %s", t, r->paused ? "paused" : "resumed");
            break;
        case CMD_PRIORITY: {
            int p = c->value < -3 ? -3 : c->value > 3 ? 3 : c->value;
            if (p == r->priority) break;
            pthread_mutex_lock(&this->state_lock);
            r->priority = p;
            pthread_mutex_unlock(&this->state_lock);
            if (r->state == TASK_WAITING || r->state == TASK_AT_ROOF) {
                TaskState was = r->state;
                set_state(this, t, resting_state(this, t));
                if (was == TASK_AT_ROOF && r->state == TASK_WAITING)
                    emit_log(this, LOG_INFO, t, "task %d: raised priority, tuned past the roof stop", t);
            }
            emit_state(this, t);
            record_steer(this, t);
            break;
        }
        case CMD_STOP_TASK:
            if (r->done || r->stopped) break;
            set_flag(this, &r->stopped, true);
            set_flag(this, &r->paused, false);
            set_state(this, t, TASK_STOPPED);
            record_steer(this, t);
            emit_log(this, LOG_INFO, t, "task %d stopped by the user", t);
            break;
        default:
            break;
        }
    }
}

/* false when the queue is full: the command is not queued (the caller reports it) */
static bool push_command(Engine *this, CommandKind kind, int task, int value) {
    pthread_mutex_lock(&this->cmd_lock);
    bool room = this->n_cmds < MAX_COMMANDS;
    if (room) this->cmds[this->n_cmds++] = (Command){kind, task, value};
    pthread_cond_signal(&this->cmd_cond);
    pthread_mutex_unlock(&this->cmd_lock);
    return room;
}

/* The session's estimate (tuner/event.h: LatencyEstimate): a group of
 * alternatives counts once, with its members' lowest best; it is closed when
 * every member is. */
static double estimated_latency(Engine *this, int *left_out) {
    LatencyEstimate est;
    LatencyEstimate_init(&est);
    for (int t = 0; t < this->n; t++) {
        if (!group_first(this, t)) continue; /* counted with its group's first task */
        double best = INFINITY;
        bool closed = true;
        for (int u = t; u < this->n; u++) {
            const TaskRun *r = &this->runs[u];
            if (!same_group(this, t, u)) continue;
            if (isfinite(r->tally.best_latency) && r->tally.best_latency > 0 && r->tally.best_latency < best)
                best = r->tally.best_latency;
            closed = closed && (r->stopped || r->done || is_paused(this, r));
        }
        LatencyEstimate_add(&est, this->tasks[t].weight, best, closed);
    }
    return LatencyEstimate_value(&est, left_out);
}

/* The latency if every task reached its roof (a group: its lowest roof); 0 when a task has none. */
static double roof_latency(const Engine *this) {
    double sum = 0;
    for (int t = 0; t < this->n; t++) {
        if (this->runs[t].roof_s <= 0) return 0;
        if (!group_first(this, t)) continue;
        double low = this->runs[t].roof_s;
        for (int u = t + 1; u < this->n; u++)
            if (same_group(this, t, u) && this->runs[u].roof_s < low) low = this->runs[u].roof_s;
        sum += this->tasks[t].weight * low;
    }
    return sum;
}

static void fill_record(const Engine *this, const Task *task, const BuildJob *job, Record *rec) {
    Record_init(rec);
    snprintf(rec->task_key, sizeof rec->task_key, "%s", task->key);
    snprintf(rec->template_name, sizeof rec->template_name, "%s", task->tmpl->name);
    snprintf(rec->target, sizeof rec->target, "%s", this->cfg.target->name);
    rec->index = job->index;
    rec->n_choice = task->space.n_knobs;
    memcpy(rec->choice, job->choice, sizeof(int32_t) * (size_t)task->space.n_knobs);
    if (task->tmpl->label) /* a schedule of a tensor expression: its number or name, and its steps */
        task->tmpl->label(&task->wl, job->index, rec->config, sizeof rec->config);
    else
        Space_format(&task->space, job->choice, rec->config, sizeof rec->config);
    if (job->src.steps && !(rec->steps = strdup(job->src.steps))) abort();
    rec->timestamp = clock_wall();
    rec->build_s = job->result.build_s;
    rec->regs = job->result.regs_per_thread;
    rec->spills = job->result.spill_bytes;
    rec->shared_bytes = job->result.shared_bytes;
    rec->local_bytes = job->result.local_bytes;
    snprintf(rec->host, sizeof rec->host, "%s", this->host);
    rec->rank = 0;
    snprintf(rec->device, sizeof rec->device, "%s", this->cfg.dev.name);
    const TaskRun *r = &this->runs[task - this->tasks];
    if (r->roof.gflops > 0) {
        rec->roof_gflops = r->roof.gflops;
        rec->roof_bound = r->roof.memory_bound ? r->roof.level : 0;
        snprintf(rec->machine_key, sizeof rec->machine_key, "%s", this->cfg.machine.key);
    }
}

/* The log failed (a write, a sync, or its path no longer names the file):
 * final. Records what the user must be told, writes a recovery copy when the
 * file was deleted or replaced, and stops the session. */
static void log_failed(Engine *this, int t, const char *why) {
    pthread_mutex_lock(&this->state_lock);
    bool first = !this->logo.failed;
    if (first) {
        this->logo.failed = true;
        snprintf(this->logo.error, sizeof this->logo.error, "%s", why);
    }
    pthread_mutex_unlock(&this->state_lock);
    if (!first) return;
    bool moved = LogWriter_moved(this->log);
    char dest[1024] = "", err[TT_ERRLEN] = "";
    if (moved && LogWriter_saveCopy(this->log, dest, sizeof dest, err) != TT_OK) dest[0] = '\0';
    pthread_mutex_lock(&this->state_lock);
    this->logo.moved = moved;
    snprintf(this->logo.recovery, sizeof this->logo.recovery, "%s", dest);
    snprintf(this->logo.recovery_error, sizeof this->logo.recovery_error, "%s", moved && !dest[0] ? err : "");
    pthread_mutex_unlock(&this->state_lock);
    if (moved && dest[0])
        emit_log(this, LOG_ERROR, t, "record log: %s; its records were copied to %s (stopping)", why, dest);
    else
        emit_log(this, LOG_ERROR, t, "record log: %s (stopping)", why);
    atomic_store(&this->stop_requested, true);
}

/* A fault of the machine persisted: the session stops (Engine_machineFault). */
static void machine_failed(Engine *this, int t, const char *why) {
    pthread_mutex_lock(&this->state_lock);
    bool first = !this->machine_fault[0];
    if (first) snprintf(this->machine_fault, sizeof this->machine_fault, "%s", why);
    pthread_mutex_unlock(&this->state_lock);
    if (first) emit_log(this, LOG_ERROR, t, "%s: a fault of this machine, not of the candidate, twice (stopping)", why);
    atomic_store(&this->stop_requested, true);
}

/* Writes one record and, only once it is in the log, counts and publishes
 * it. Returns false when it could not be written: then it is not counted,
 * not published and never a best, and the session stops. *gflops receives
 * its GFLOPS (0 for errors). */
static bool commit_record(Engine *this, int t, Record *rec, double *gflops) {
    char err[TT_ERRLEN];
    if (LogWriter_append(this->log, rec, err) != TT_OK) {
        pthread_mutex_lock(&this->state_lock);
        this->logo.lost++;
        pthread_mutex_unlock(&this->state_lock);
        log_failed(this, t, err);
        return false;
    }
    const Task *task = &this->tasks[t];
    double g = Record_gflops(rec, task->flops);
    bool improved = account(this, t, rec, g);
    TaskRun *r = &this->runs[t];
    r->since_improve = improved ? 0 : r->since_improve + 1;
    pthread_mutex_lock(&this->state_lock);
    this->total_trials++;
    this->session_trials++;
    int trial = r->tally.trials;
    pthread_mutex_unlock(&this->state_lock);
    EngineEvent ev = {.kind = EV_RESULT, .task_id = t, .trial = trial, .gflops = g, .best = improved};
    ev.record = malloc(sizeof(Record));
    if (!ev.record) abort();
    Record_init(ev.record);
    Record_copy(ev.record, rec);
    emit(this, &ev);
    *gflops = g;
    return true;
}

static void record_measurement(Record *rec, const MeasureResult *m, const MeasureOptions *o, double best);

/* The slow cutoff of task t's next candidates: a multiple of its best. */
static double slow_cutoff(const Engine *this, int t) {
    double best = this->runs[t].tally.best_latency;
    return isfinite(best) && SLOW_FACTOR > 0 ? best * SLOW_FACTOR : 0;
}

/* A build that failed for want of space or of a file-size allowance in the
 * temp folder: the machine's fault, whatever the candidate. */
static bool build_fault_of_machine(const char *msg) {
    return msg && (strstr(msg, strerror(ENOSPC)) || strstr(msg, strerror(EFBIG)) || strstr(msg, strerror(EDQUOT)));
}

/* Builds' and measurements' failures that are the machine's, not the
 * candidate's (*machine set): the task file could not be written (no space,
 * a file limit, out of memory in the harness), the worker was killed from
 * outside, a build found no space. Such a record must not be committed. */
static void measure_job(Engine *this, int t, BuildJob *job, Record *rec, bool *machine) {
    const MeasureOptions *mo = &this->cfg.measure;
    *machine = false;
    if (job->result.error_no != ERR_NO_ERROR) {
        Record_setError(rec, job->result.error_no,
                        job->result.msg ? job->result.msg : MeasureError_name(job->result.error_no));
        *machine = build_fault_of_machine(job->result.msg);
        return;
    }
    if (mo->compile_only) return; /* built, resources recorded, no timing */
    char err[TT_ERRLEN];
    if (this->runner_task != t) {
        if (this->cfg.target->runner_set_task(this->runner, &this->tasks[t].wl, err) != TT_OK) {
            Record_setError(rec, ERR_UNKNOWN, err);
            *machine = true; /* the same task file for every candidate */
            return;
        }
        this->runner_task = t;
    }
    MeasureOptions opt = *mo;
    opt.slow_cutoff_s = slow_cutoff(this, t);
    MeasureResult mr;
    MeasureResult_init(&mr);
    atomic_store(&this->measuring, 1);
    this->cfg.target->measure(this->runner, &job->src, &job->result, &opt, &mr);
    atomic_store(&this->measuring, 0);
    if (mr.error_no == ERR_RUNTIME_DEVICE || mr.error_no == ERR_RUN_TIMEOUT || mr.machine_fault) this->runner_task = -1;
    *machine = mr.machine_fault && mr.error_no != ERR_NO_ERROR;
    record_measurement(rec, &mr, &opt, this->runs[t].tally.best_latency);
    MeasureResult_done(&mr);
}

/* Fills a record from a measurement's result (local or from a backend). */
static void record_measurement(Record *rec, const MeasureResult *m, const MeasureOptions *o, double best) {
    const MeasureResult mr = *m;
    const MeasureOptions opt = *o;
    rec->run_s = mr.run_s;
    rec->pack_s = mr.pack_s;
    if (mr.error_no != ERR_NO_ERROR) {
        Record_setError(rec, mr.error_no, mr.msg ? mr.msg : MeasureError_name(mr.error_no));
    } else {
        rec->n_costs = mr.n_costs < REC_MAX_COSTS ? mr.n_costs : REC_MAX_COSTS;
        memcpy(rec->costs, mr.costs, sizeof(double) * (size_t)rec->n_costs);
        for (int i = 0; i < rec->n_costs; i++)
            if (!(isfinite(rec->costs[i]) && rec->costs[i] > 0)) {
                /* a latency that is not a positive number is a measurement failure, never a best */
                char why[96];
                snprintf(why, sizeof why, "the timer gave a cost of %g s", rec->costs[i]);
                rec->n_costs = 0;
                Record_setError(rec, ERR_UNKNOWN, why);
                break;
            }
        if (rec->n_costs < opt.repeat && opt.slow_cutoff_s > 0) {
            char note[128];
            snprintf(note, sizeof note, "timed once: more than %dx slower than the best (%.3f ms)", SLOW_FACTOR,
                     best * 1e3);
            Record_setError(rec, ERR_NO_ERROR, note);
        }
    }
}

static void push_pending(TaskRun *r, uint64_t index) {
    if (r->n_pending == r->cap_pending) {
        r->cap_pending = r->cap_pending ? r->cap_pending * 2 : 64;
        r->pending = realloc(r->pending, (size_t)r->cap_pending * sizeof(uint64_t));
        if (!r->pending) abort();
    }
    r->pending[r->n_pending++] = index;
}

/* A round: up to n configs of one task, proposed together; the strategy
 * learns from them once every one came back. Locally a round is built and
 * measured before the next one starts (engine_local); with a backend several
 * rounds are in flight at once and the results of all of them are recorded in
 * the order they come back (engine_async). */
typedef struct Round {
    int t;
    int n;          /* jobs to build and measure: what passed the precheck */
    BuildJob *jobs; /* n */
    double *cut;    /* backend: each job's slow cutoff */
    double *gflops; /* results in completion order, for the strategy */
    uint64_t *done_idx;
    int n_done, measured_ok;
    int left;       /* backend: jobs not back yet */
    bool cut_short; /* a pause or a stop dropped some of its jobs (pending again) */
} Round;

/* Starts a round of up to n (>= 1) configs of task t: proposes them (those
 * dropped earlier first) and records the configs the precheck rejects. */
static void round_begin(Engine *this, int t, int n, Round *rd) {
    TaskRun *r = &this->runs[t];
    const Task *task = &this->tasks[t];
    memset(rd, 0, sizeof *rd);
    rd->t = t;
    if (r->busy++ == 0) r->busy_since = clock_mono();
    if (r->started < 0) r->started = now_s(this);
    set_state(this, t, TASK_TUNING);

    uint64_t *idx = malloc((size_t)n * sizeof(uint64_t));
    rd->jobs = malloc((size_t)n * sizeof(BuildJob));
    rd->gflops = calloc((size_t)n, sizeof(double));
    rd->done_idx = malloc((size_t)n * sizeof(uint64_t));
    if (!idx || !rd->jobs || !rd->gflops || !rd->done_idx) abort();
    int got = 0;
    while (got < n && r->n_pending > 0)
        idx[got++] = r->pending[--r->n_pending];
    if (got < n) got += r->strat->propose(r->strategy, &r->visited, idx + got, n - got);
    if (got == 0) {
        set_flag(this, &r->done, true);
        emit_log(this, LOG_INFO, t, "task %d: search space exhausted (%llu configs)", t,
                 (unsigned long long)task->space.total);
    }
    /* Precheck: invalid configs never reach the compiler. */
    for (int i = 0; i < got; i++) {
        BuildJob *job = &rd->jobs[rd->n];
        BuildJob_init(job, task, idx[i]);
        char reason[256] = "";
        if (task->tmpl->precheck &&
            !task->tmpl->precheck(&task->wl, &task->space, job->choice, &this->cfg.dev, reason, sizeof reason)) {
            Record rec;
            fill_record(this, task, job, &rec);
            Record_setError(&rec, ERR_INSTANTIATION, reason[0] ? reason : "invalid config");
            if (commit_record(this, t, &rec, &rd->gflops[rd->n_done])) rd->done_idx[rd->n_done++] = idx[i];
            Record_done(&rec);
            BuildJob_done(job);
            continue;
        }
        rd->n++;
    }
    free(idx);
}

/* Builds and measures a round here, in chunks of a few jobs per builder
 * thread: results reach the observers early, steering takes effect within a
 * chunk, and still no compile overlaps a timing. */
static void round_local(Engine *this, Round *rd) {
    TaskRun *r = &this->runs[rd->t];
    const Task *task = &this->tasks[rd->t];
    int chunk = this->pool ? BuilderPool_threads(this->pool) * CHUNK_PER_BUILDER : 1;
    bool drop = false;
    for (int s = 0; s < rd->n; s += chunk) {
        int m = rd->n - s < chunk ? rd->n - s : chunk;
        if (!drop) BuilderPool_run(this->pool, rd->jobs + s, m, &this->stop_requested);
        for (int i = s; i < s + m; i++) {
            BuildJob *job = &rd->jobs[i];
            apply_commands(this);
            if (atomic_load(&this->stop_requested) || is_paused(this, r) || r->stopped) drop = true;
            if (drop || job->skipped) {
                /* Dropped cleanly: never recorded, measured later in this session
                 * (pending) or by a resume. */
                push_pending(r, job->index);
                BuildJob_done(job);
                continue;
            }
            Record rec;
            fill_record(this, task, job, &rec);
            bool machine;
            measure_job(this, rd->t, job, &rec, &machine);
            if (machine && job->result.error_no == ERR_NO_ERROR) { /* a measurement: once more */
                emit_log(this, LOG_WARN, rd->t, "%s (a fault of the machine, not of the candidate): measuring it again",
                         rec.error_msg ? rec.error_msg : "?");
                Record_done(&rec);
                fill_record(this, task, job, &rec);
                measure_job(this, rd->t, job, &rec, &machine);
            }
            if (machine) { /* never recorded as measured: a resume measures it */
                machine_failed(this, rd->t, rec.error_msg ? rec.error_msg : "?");
                push_pending(r, job->index);
                Record_done(&rec);
                BuildJob_done(job);
                drop = true;
                continue;
            }
            atomic_fetch_add(&this->measured_here, 1);
            if (rec.error_no != ERR_NO_ERROR) atomic_fetch_add(&this->errors_here, 1);
            if (commit_record(this, rd->t, &rec, &rd->gflops[rd->n_done])) {
                if (rd->gflops[rd->n_done] > 0) rd->measured_ok++;
                rd->done_idx[rd->n_done++] = job->index;
            }
            Record_done(&rec);
            BuildJob_done(job);
        }
    }
    rd->cut_short = drop;
}

/* Every result of the round is in: syncs the log, teaches the strategies,
 * and settles the task's state (still tuning while another of its rounds is
 * in flight). Frees the round. */
static void round_end(Engine *this, Round *rd) {
    int t = rd->t;
    TaskRun *r = &this->runs[t];
    const Task *task = &this->tasks[t];
    char err[TT_ERRLEN];
    if (LogWriter_sync(this->log, err) != TT_OK)
        log_failed(this, t, err); /* syncs what was written, even after a failed append */
    if (rd->n_done) {
        r->strat->update(r->strategy, rd->done_idx, rd->gflops, rd->n_done);
        share_results(this, t, rd->done_idx, rd->gflops, rd->n_done);
    }
    r->rounds++;

    pthread_mutex_lock(&this->state_lock);
    if (rd->n_done && !rd->measured_ok && !this->cfg.measure.compile_only) r->tally.current_gflops = 0;
    if (--r->busy == 0) r->spent += clock_mono() - r->busy_since;
    pthread_mutex_unlock(&this->state_lock);

    if (!r->warned_all_failed && r->tally.trials >= 16 && r->tally.successes == 0) {
        r->warned_all_failed = true;
        emit_log(this, LOG_WARN, t, "every trial of task %d failed so far (%d of %d): open its errors", t,
                 r->tally.errors, r->tally.trials);
    }
    if (r->visited.count >= task->space.total && r->n_pending == 0) set_flag(this, &r->done, true);
    if (this->cfg.early_stopping > 0 && r->since_improve >= this->cfg.early_stopping && r->tally.successes > 0 &&
        (r->busy == 0 || !r->done)) { /* said once when several of its rounds end */
        set_flag(this, &r->done, true);
        emit_log(this, LOG_INFO, t, "task %d: early stop, no improvement in %d trials", t, r->since_improve);
    }
    if (r->busy == 0) {
        TaskState next = r->stopped           ? TASK_STOPPED
                         : r->done            ? TASK_DONE
                         : is_paused(this, r) ? TASK_PAUSED
                                              : TASK_WAITING;
        set_state(this, t, next);
    }
    free(rd->jobs);
    free(rd->cut);
    free(rd->gflops);
    free(rd->done_idx);
    memset(rd, 0, sizeof *rd);
}

/* Puts task t at its roof when the scheduler's roof stop now holds it back, and says why. */
static void announce_at_roof(Engine *this, int t) {
    if (this->runs[t].state != TASK_WAITING || resting_state(this, t) != TASK_AT_ROOF) return;
    set_state(this, t, TASK_AT_ROOF);
    const Roof *roof = &this->runs[t].roof;
    const char *bound = Roof_boundText(roof->memory_bound ? roof->level : 0);
    double flops = this->tasks[t].flops, own = this->runs[t].tally.best_latency;
    /* the group's best, when another member holds it */
    int holder = t;
    for (int u = 0; u < this->n; u++)
        if (same_group(this, t, u) && this->runs[u].tally.best_latency < own) {
            own = this->runs[u].tally.best_latency;
            holder = u;
        }
    if (holder == t)
        emit_log(this, LOG_INFO, t,
                 "task %d: at %.0f%% of its roof (%.1f %sGFLOPS, %s): no more rounds unless its priority is raised", t,
                 100 * Roof_share(this->runs[t].tally.best_gflops, roof->gflops), roof->gflops,
                 Template_effective(this->tasks[t].tmpl) ? "effective " : "", bound);
    else
        emit_log(this, LOG_INFO, t,
                 "task %d: its alternative, task %d (%s), is at %.0f%% of this template's roof (%.1f GFLOPS, %s): "
                 "no more rounds unless its priority is raised",
                 t, holder, this->tasks[holder].tmpl->name, 100 * Roof_share(flops / own * 1e-9, roof->gflops),
                 roof->gflops, bound);
}

/* The strategy's status line, after the round's progress. */
static void emit_strategy(Engine *this, int t) {
    TaskRun *r = &this->runs[t];
    if (!r->strat->status) return;
    EngineEvent ev = {.kind = EV_STRATEGY, .task_id = t};
    if (r->strat->status(r->strategy, ev.text, sizeof ev.text)) emit(this, &ev);
}

/* After a round of task t ended: the scheduler learns its best, the roof
 * stop may hold the task back, the observers and the .tsv get the round. */
static void round_after(Engine *this, int t, bool whole) {
    if (!whole && this->runs[t].rounds == 1) {
        /* a first round cut short by a pause or stop is no warm-up: the
         * task gets a whole first round when it runs again */
        this->runs[t].rounds = 0;
    } else {
        TaskScheduler_update(this->sched, t, this->runs[t].tally.best_latency);
    }
    /* a round of one member can put the others of its group at their roof */
    for (int u = 0; u < this->n; u++)
        if (same_group(this, t, u)) announce_at_roof(this, u);
    EngineEvent ev = {.kind = EV_ROUND, .task_id = t};
    pthread_mutex_lock(&this->state_lock);
    ev.est_latency_s = estimated_latency(this, NULL);
    ev.trials = this->total_trials;
    pthread_mutex_unlock(&this->state_lock);
    if (this->tsv) {
        fprintf(this->tsv, "%.3f\t%.3f\t%d\t%.6f\t%d\n", clock_wall(), now_s(this), ev.trials,
                isfinite(ev.est_latency_s) ? ev.est_latency_s * 1e3 : -1.0, t);
        fflush(this->tsv);
    }
    emit(this, &ev);
    emit_strategy(this, t);
}

/* The scheduler's pick for the next round, -1 when every task left is done
 * or paused (*any_paused: some are paused). A task with a round in flight
 * (with a backend) is picked only when no other task can be. */
static int pick_task(Engine *this, SchedTaskState *st, bool *any_paused) {
    bool any_busy = false;
    *any_paused = false;
    for (int t = 0; t < this->n; t++) {
        TaskRun *r = &this->runs[t];
        st[t] = sched_state(this, t);
        if (is_paused(this, r) && !r->done && !r->stopped) *any_paused = true;
        if (r->busy) {
            any_busy = true;
            st[t].paused = true;
        }
    }
    int t = TaskScheduler_next(this->sched, st);
    if (t < 0 && any_busy) {
        for (int i = 0; i < this->n; i++)
            st[i] = sched_state(this, i);
        t = TaskScheduler_next(this->sched, st);
    }
    pthread_mutex_lock(&this->state_lock);
    this->next_task = t;
    pthread_mutex_unlock(&this->state_lock);
    return t;
}

/* The size of task t's next round with `remaining` trials left (> 0). */
static int round_size(const Engine *this, int t, int remaining) {
    int n = remaining < this->batch ? remaining : this->batch;
    /* A task's first round is smaller, so that the scheduler starts
     * choosing within the first quarter of the budget. */
    if (this->runs[t].rounds == 0 && n > this->first_round) n = this->first_round;
    return n;
}

/* Everything left is paused: waits a little for the user. */
static void wait_for_command(Engine *this) {
    pthread_mutex_lock(&this->cmd_lock);
    if (this->n_cmds == 0 && !atomic_load(&this->stop_requested)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 200000000;
        if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
        pthread_cond_timedwait(&this->cmd_cond, &this->cmd_lock, &ts);
    }
    pthread_mutex_unlock(&this->cmd_lock);
}

/* This process builds and measures: one round at a time. */
static void engine_local(Engine *this, SchedTaskState *st) {
    while (!atomic_load(&this->stop_requested)) {
        apply_commands(this);
        int remaining = this->cfg.trials - this->total_trials;
        if (remaining <= 0) break;
        bool any_paused;
        int t = pick_task(this, st, &any_paused);
        if (t < 0) {
            if (!any_paused) break;
            wait_for_command(this);
            continue;
        }
        Round rd;
        round_begin(this, t, round_size(this, t, remaining), &rd);
        round_local(this, &rd);
        bool whole = !rd.cut_short;
        round_end(this, &rd);
        round_after(this, t, whole);
    }
}

/* Rounds in flight on a backend at most; a job's cookie is its round's slot
 * times COOKIE_JOBS plus its place in the round (--batch is at most 4096). */
#define MAX_FLIGHTS 64
#define COOKIE_JOBS 65536

static void round_submit(Engine *this, Round *rd, int slot) {
    const MeasureBackend *be = this->cfg.backend;
    const Task *task = &this->tasks[rd->t];
    BackendJob *bj = calloc((size_t)rd->n, sizeof *bj);
    rd->cut = calloc((size_t)rd->n, sizeof(double));
    if (!bj || !rd->cut) abort();
    for (int i = 0; i < rd->n; i++) {
        bj[i].cookie = slot * COOKIE_JOBS + i;
        bj[i].group = rd->t;
        snprintf(bj[i].task_key, sizeof bj[i].task_key, "%s", task->key);
        snprintf(bj[i].template_name, sizeof bj[i].template_name, "%s", task->tmpl->name);
        bj[i].index = rd->jobs[i].index;
        bj[i].slow_cutoff_s = rd->cut[i] = slow_cutoff(this, rd->t);
    }
    rd->left = rd->n;
    be->submit(be->ctx, bj, rd->n);
    free(bj);
}

/* A job that failed on a rank for a reason of that rank's machine (its temp
 * folder full, its worker killed from outside, its task file unwritable) is
 * not recorded: it is measured again, as a local one is. The same rank
 * failing so twice with no good measurement between stops the session. */
static bool backend_machine_fault(Engine *this, const Round *rd, const BackendOutcome *o) {
    const char *msg = o->mr.msg ? o->mr.msg : MeasureError_name(o->mr.error_no);
    bool machine = o->build_error != ERR_NO_ERROR ? build_fault_of_machine(o->mr.msg) : o->mr.machine_fault;
    if (!machine) {
        if (o->rank == this->fault_rank) this->fault_rank = -1;
        return false;
    }
    if (o->rank == this->fault_rank) {
        char why[TT_ERRLEN];
        snprintf(why, sizeof why, "rank %d (%s): %s", o->rank, o->host, msg);
        machine_failed(this, rd->t, why);
        return true;
    }
    this->fault_rank = o->rank;
    emit_log(this, LOG_WARN, rd->t,
             "rank %d (%s): %s (a fault of that machine, not of the candidate): measuring it again", o->rank, o->host,
             msg);
    return true;
}

/* One job of a round came back from the backend: measured, it becomes a
 * record (naming where it ran); unmeasured, it is pending again. */
static void round_outcome(Engine *this, Round *rd, int i, BackendOutcome *o) {
    TaskRun *r = &this->runs[rd->t];
    const Task *task = &this->tasks[rd->t];
    BuildJob *job = &rd->jobs[i];
    if (o->kind == OUTCOME_UNMEASURED) {
        /* never recorded: measured later in this session or by a resume */
        push_pending(r, job->index);
        rd->cut_short = true;
        MeasureResult_done(&o->mr);
        BuildJob_done(job);
        return;
    }
    if (backend_machine_fault(this, rd, o)) {
        push_pending(r, job->index); /* measured again, on whichever rank is free */
        rd->cut_short = true;
        MeasureResult_done(&o->mr);
        BuildJob_done(job);
        return;
    }
    job->result.error_no = o->build_error;
    job->result.build_s = o->build_s;
    job->result.regs_per_thread = o->regs;
    job->result.spill_bytes = o->spills;
    job->result.shared_bytes = o->shared_bytes;
    job->result.local_bytes = o->local_bytes;
    Record rec;
    fill_record(this, task, job, &rec);
    snprintf(rec.host, sizeof rec.host, "%s", o->host);
    rec.rank = o->rank;
    snprintf(rec.device, sizeof rec.device, "%s", o->device);
    if (o->build_error != ERR_NO_ERROR) {
        Record_setError(&rec, o->build_error, o->mr.msg ? o->mr.msg : MeasureError_name(o->build_error));
    } else if (!this->cfg.measure.compile_only) {
        MeasureOptions opt = this->cfg.measure;
        opt.slow_cutoff_s = rd->cut[i];
        record_measurement(&rec, &o->mr, &opt, rd->cut[i] > 0 ? rd->cut[i] / SLOW_FACTOR : INFINITY);
    }
    MeasureResult_done(&o->mr);
    if (commit_record(this, rd->t, &rec, &rd->gflops[rd->n_done])) {
        if (rd->gflops[rd->n_done] > 0) rd->measured_ok++;
        rd->done_idx[rd->n_done++] = job->index;
    }
    Record_done(&rec);
    BuildJob_done(job);
}

/* Builds and measures through a backend (tuner/backend.h) as a queue: while
 * the backend has free slots (`want`), the next round is proposed and
 * submitted, so a slow rank never stalls the others; outcomes are recorded
 * as they come, whatever their round; a round ends (its strategy learns, the
 * scheduler updates) when its last job is back. */
static void engine_async(Engine *this, SchedTaskState *st) {
    const MeasureBackend *be = this->cfg.backend;
    Round *fl = calloc(MAX_FLIGHTS, sizeof *fl);
    bool *used = calloc(MAX_FLIGHTS, sizeof *used);
    if (!fl || !used) abort();
    int n_fl = 0, in_flight = 0; /* rounds, and jobs submitted and not back */
    bool cancelled_all = false;
    for (;;) {
        apply_commands(this);
        bool stop = atomic_load(&this->stop_requested);
        /* What a stop or a pause no longer wants comes back: measured within
         * a short grace, or unmeasured (pending again). */
        if (stop && !cancelled_all && n_fl) {
            be->cancel(be->ctx, -1);
            cancelled_all = true;
            for (int s = 0; s < MAX_FLIGHTS; s++)
                fl[s].cut_short |= used[s];
        }
        for (int s = 0; s < MAX_FLIGHTS && !stop; s++) {
            if (!used[s] || fl[s].cut_short) continue;
            const TaskRun *r = &this->runs[fl[s].t];
            if (!is_paused(this, r) && !r->stopped) continue;
            be->cancel(be->ctx, fl[s].t);
            for (int k = 0; k < MAX_FLIGHTS; k++)
                if (used[k] && fl[k].t == fl[s].t) fl[k].cut_short = true;
        }
        if (stop && n_fl == 0) break;
        int remaining = this->cfg.trials - this->total_trials - in_flight;
        if (!stop && remaining <= 0 && n_fl == 0) break;
        if (!stop && remaining > 0 && n_fl < MAX_FLIGHTS && (n_fl == 0 || (be->want && be->want(be->ctx) > 0))) {
            bool any_paused;
            int t = pick_task(this, st, &any_paused);
            if (t >= 0) {
                int s = 0;
                while (used[s])
                    s++;
                Round *rd = &fl[s];
                round_begin(this, t, round_size(this, t, remaining), rd);
                if (rd->n == 0) { /* exhausted, or every config rejected by the precheck */
                    round_end(this, rd);
                    round_after(this, t, true);
                    continue;
                }
                round_submit(this, rd, s);
                used[s] = true;
                n_fl++;
                in_flight += rd->n;
                continue;
            }
            if (n_fl == 0) {
                if (!any_paused) break;
                wait_for_command(this);
                continue;
            }
        }
        BackendOutcome o;
        if (!be->next(be->ctx, &o, 0.1)) continue;
        if (o.kind == OUTCOME_NOTE) {
            emit_log(this, o.fatal ? LOG_ERROR : o.warn ? LOG_WARN : LOG_INFO, -1, "%s", o.note);
            if (o.fatal) atomic_store(&this->stop_requested, true);
            MeasureResult_done(&o.mr);
            continue;
        }
        int s = o.cookie / COOKIE_JOBS, i = o.cookie % COOKIE_JOBS;
        if (o.cookie < 0 || s >= MAX_FLIGHTS || !used[s] || i >= fl[s].n) { /* not ours: never recorded */
            MeasureResult_done(&o.mr);
            continue;
        }
        Round *rd = &fl[s];
        round_outcome(this, rd, i, &o);
        in_flight--;
        if (--rd->left == 0) {
            int t = rd->t;
            bool whole = !rd->cut_short;
            round_end(this, rd);
            used[s] = false;
            n_fl--;
            round_after(this, t, whole);
        }
    }
    free(fl);
    free(used);
}

static void *engine_main(void *arg) {
    Engine *this = arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);

    SchedTaskState *st = calloc((size_t)this->n, sizeof *st);
    if (!st) abort();
    if (this->cfg.backend)
        engine_async(this, st);
    else
        engine_local(this, st);
    free(st);
    /* Tasks that were still open when the budget ran out are done too. */
    for (int t = 0; t < this->n; t++) {
        TaskRun *r = &this->runs[t];
        if (!r->stopped && !atomic_load(&this->stop_requested) && r->state != TASK_PAUSED && r->state != TASK_AT_ROOF)
            set_state(this, t, TASK_DONE);
    }
    char err[TT_ERRLEN];
    if (LogWriter_sync(this->log, err) != TT_OK) log_failed(this, -1, err);
    pthread_mutex_lock(&this->state_lock);
    this->stopped_early = atomic_load(&this->stop_requested);
    this->t_end = now_s(this);
    pthread_mutex_unlock(&this->state_lock);
    atomic_store(&this->finished, true);
    EngineEvent ev = {.kind = EV_FINISHED, .task_id = -1};
    snprintf(ev.text, sizeof ev.text, "%s", atomic_load(&this->stop_requested) ? "stopped" : "finished");
    emit(this, &ev);
    return NULL;
}

Status Engine_start(Engine *this, char *resumed, size_t resumed_len, char *err) {
    off_t torn = -1;
    struct stat log_st;
    bool fresh_log = stat(this->log_path, &log_st) != 0 || log_st.st_size == 0;
    if (LogWriter_open(this->log_path, this->cfg.target->name, &this->log, &torn, err) != TT_OK) return TT_ERR;
    if (restore(this, resumed, resumed_len, err) != TT_OK) return TT_ERR;
    for (int t = 0; t < this->n; t++)
        if (this->runs[t].state == TASK_WAITING) this->runs[t].state = resting_state(this, t);
    /* the task list, so that every reader of the log shows this session's IDs and weights */
    LogSession ses;
    LogSession_init(&ses);
    ses.timestamp = clock_wall();
    snprintf(ses.network, sizeof ses.network, "%s", this->cfg.network ? this->cfg.network : "");
    for (int t = 0; t < this->n; t++)
        LogSession_addTask(&ses, this->tasks[t].key, this->tasks[t].tmpl->name, this->tasks[t].weight, ses.network);
    Status ses_ok = LogWriter_appendSession(this->log, &ses, err);
    LogSession_done(&ses);
    if (ses_ok != TT_OK) return TT_ERR;
    if (torn >= 0 && resumed && resumed_len) {
        size_t len = strlen(resumed);
        snprintf(resumed + len, resumed_len - len,
                 "%sa torn last record was cut off at byte %lld (the crash's batch in flight)", len ? "; " : "",
                 (long long)torn);
    }
    char tsv_path[1024];
    snprintf(tsv_path, sizeof tsv_path, "%s.tsv", this->log_path);
    /* a new log starts its curve anew: a LOG.tsv left by an earlier log of that name is not its history */
    struct stat tsv_st; /* missing or empty (a session killed before its first round): a header first */
    bool fresh_tsv = fresh_log || stat(tsv_path, &tsv_st) != 0 || tsv_st.st_size == 0;
    this->tsv = fopen(tsv_path, fresh_tsv ? "w" : "a");
    if (this->tsv && fresh_tsv) {
        fprintf(this->tsv, "unix_time\tsession_s\ttrials\test_latency_ms\ttask\n");
        fflush(this->tsv);
    }
    if (!this->cfg.measure.compile_only && !this->cfg.backend) {
        char why[TT_ERRLEN] = "";
        this->runner = this->cfg.target->runner_new(&this->cfg.dev, why);
        if (!this->runner) return tt_fail(err, "%s target: %s", this->cfg.target->name, why);
    }
    int builders = this->cfg.builders > 0 ? this->cfg.builders : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (builders < 1) builders = 1;
    if (!this->cfg.backend)
        this->pool = BuilderPool_new(builders, this->cfg.target, &this->cfg.dev, &this->cfg.measure, this->workdir);
    this->t0 = clock_mono();
    for (int t = 0; t < this->n; t++)
        emit_state(this, t);
    if (pthread_create(&this->thread, NULL, engine_main, this) != 0)
        return tt_fail(err, "cannot start the engine thread");
    this->started = true;
    return TT_OK;
}

/* ---- steering ------------------------------------------------------------------ */

bool Engine_pause(Engine *this, int task_id, bool paused) { return push_command(this, CMD_PAUSE, task_id, paused); }
bool Engine_pauseAll(Engine *this, bool paused) { return push_command(this, CMD_PAUSE_ALL, -1, paused); }
bool Engine_setPriority(Engine *this, int task_id, int priority) {
    return push_command(this, CMD_PRIORITY, task_id, priority);
}
bool Engine_stopTask(Engine *this, int task_id) { return push_command(this, CMD_STOP_TASK, task_id, 0); }

void Engine_requestStop(Engine *this) {
    double zero = 0;
    atomic_compare_exchange_strong(&this->stop_at, &zero, clock_mono());
    atomic_store(&this->stop_requested, true);
    pthread_mutex_lock(&this->cmd_lock);
    pthread_cond_signal(&this->cmd_cond);
    pthread_mutex_unlock(&this->cmd_lock);
}

int Engine_eventFd(const Engine *this) { return this->events.fd; }
int Engine_drainEvents(Engine *this, EngineEvent *out, int max) { return EventQueue_drain(&this->events, out, max); }
uint64_t Engine_droppedEvents(const Engine *this) { return __atomic_load_n(&this->events.dropped, __ATOMIC_RELAXED); }
bool Engine_finished(Engine *this) { return atomic_load(&this->finished); }

bool Engine_stopOverdue(Engine *this) {
    double at = atomic_load(&this->stop_at);
    return at > 0 && !atomic_load(&this->finished) && clock_mono() - at > ENGINE_STOP_GRACE_S;
}

bool Engine_abandoned(const Engine *this) { return this->abandoned; }

bool Engine_machineFault(Engine *this, char *out, size_t cap) {
    pthread_mutex_lock(&this->state_lock);
    bool any = this->machine_fault[0] != '\0';
    snprintf(out, cap, "%s", this->machine_fault);
    pthread_mutex_unlock(&this->state_lock);
    return any;
}

int Engine_takeRestored(Engine *this, ResumeTrial **out) {
    pthread_mutex_lock(&this->state_lock);
    int n = this->n_restored;
    *out = this->restored;
    this->restored = NULL;
    this->n_restored = 0;
    pthread_mutex_unlock(&this->state_lock);
    return n;
}

void Engine_snapshot(Engine *this, SessionSnapshot *out) {
    memset(out, 0, sizeof *out);
    out->rows = calloc((size_t)this->n, sizeof(TaskRow));
    if (!out->rows) abort();
    out->n_tasks = this->n;
    pthread_mutex_lock(&this->state_lock);
    out->elapsed_s = this->t_end > 0 ? this->t_end : this->t0 > 0 ? now_s(this) : 0;
    out->trials = this->total_trials;
    out->restored = this->restored_trials;
    out->budget = this->cfg.trials;
    out->trials_per_s = out->elapsed_s > 0 ? this->session_trials / out->elapsed_s : 0;
    out->est_latency_s = estimated_latency(this, &out->est_left_out);
    out->all_paused = this->all_paused;
    out->roof_latency_s = roof_latency(this);
    out->next_task = this->next_task;
    out->finished = atomic_load(&this->finished);
    /* a stop asked for after the session had finished on its own is no stop */
    out->stopped = out->finished ? this->stopped_early : atomic_load(&this->stop_requested);
    int active = 0;
    for (int t = 0; t < this->n; t++) {
        TaskRun *r = &this->runs[t];
        if (!(r->done || r->stopped || r->state == TASK_DONE || r->state == TASK_AT_ROOF)) active++;
    }
    int left = this->cfg.trials - this->total_trials;
    if (left < 0) left = 0;
    for (int t = 0; t < this->n; t++) {
        TaskRun *r = &this->runs[t];
        TaskRow *row = &out->rows[t];
        row->id = t;
        row->state = r->state;
        row->priority = r->priority;
        row->user_paused = r->paused;
        row->trials = r->tally.trials;
        bool open =
            !(r->done || r->stopped || r->state == TASK_DONE || r->state == TASK_STOPPED || r->state == TASK_AT_ROOF);
        row->allotted = r->tally.trials + (open && active ? left / active : 0);
        row->errors = r->tally.errors;
        row->best_latency_s = r->tally.best_latency;
        row->best_gflops = r->tally.best_gflops;
        row->current_gflops = r->tally.current_gflops;
        row->best_index = r->tally.best_index;
        row->started = r->started;
        row->elapsed_s = r->spent;
        row->roof_gflops = r->roof.gflops;
        row->roof_bound = r->roof.memory_bound ? r->roof.level : 0;
        row->group = this->tasks[t].group;
        row->effective = Template_effective(this->tasks[t].tmpl);
    }
    pthread_mutex_unlock(&this->state_lock);
    out->building = this->pool ? BuilderPool_active(this->pool) : 0;
    out->measuring = atomic_load(&this->measuring);
    if (this->cfg.backend) {
        /* the servers' states: how many build, how many time */
        DeviceRow rows[64];
        int n = this->cfg.backend->devices(this->cfg.backend->ctx, rows, 64);
        for (int i = 0; i < n; i++) {
            out->building += rows[i].state == DEVSTATE_BUILDING;
            out->measuring += rows[i].state == DEVSTATE_MEASURING;
        }
    }
}

int Engine_devices(Engine *this, DeviceRow *out, int max) {
    if (this->cfg.backend) {
        int n = this->cfg.backend->devices(this->cfg.backend->ctx, out, max);
        if (atomic_load(&this->finished)) /* the session is over: a server still up has nothing more to do */
            for (int i = 0; i < n; i++)
                if (out[i].state == DEVSTATE_IDLE || out[i].state == DEVSTATE_BUILDING ||
                    out[i].state == DEVSTATE_MEASURING)
                    out[i].state = DEVSTATE_DONE;
        return n;
    }
    if (max < 1) return 0;
    /* a session of one process: itself, as rank 0 */
    memset(out, 0, sizeof *out);
    snprintf(out->host, sizeof out->host, "%s", this->host);
    snprintf(out->device, sizeof out->device, "%s", this->cfg.dev.name);
    bool fin = atomic_load(&this->finished);
    out->state = fin                                            ? DEVSTATE_DONE
                 : atomic_load(&this->measuring)                ? DEVSTATE_MEASURING
                 : this->pool && BuilderPool_active(this->pool) ? DEVSTATE_BUILDING
                                                                : DEVSTATE_IDLE;
    out->measured = atomic_load(&this->measured_here);
    out->errors = atomic_load(&this->errors_here);
    pthread_mutex_lock(&this->state_lock);
    double el = this->t_end > 0 ? this->t_end : this->t0 > 0 ? now_s(this) : 0;
    pthread_mutex_unlock(&this->state_lock);
    out->cand_per_s = el > 0 ? out->measured / el : 0;
    return 1;
}

void Engine_logOutcome(Engine *this, LogOutcome *out) {
    pthread_mutex_lock(&this->state_lock);
    *out = this->logo;
    pthread_mutex_unlock(&this->state_lock);
}

void Engine_wait(Engine *this) {
    /* a stop is bounded: what is still in flight after the grace (a build
     * that never ends) is left behind; the log keeps what was written */
    while (this->started && atomic_load(&this->stop_at) > 0 && !atomic_load(&this->finished) &&
           !Engine_stopOverdue(this))
        nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
    if (this->started && !atomic_load(&this->finished) && atomic_load(&this->stop_at) > 0) {
        this->abandoned = true;
        char err[TT_ERRLEN];
        if (this->log && LogWriter_sync(this->log, err) != TT_OK) log_failed(this, -1, err);
        pthread_mutex_lock(&this->state_lock);
        this->logo.records = this->log ? LogWriter_records(this->log) : 0;
        this->logo.unsynced = this->logo.failed && this->log ? LogWriter_unsynced(this->log) : 0;
        pthread_mutex_unlock(&this->state_lock);
        pthread_detach(this->thread);
        this->started = false;
        return; /* the thread still uses the engine: Engine_delete then frees nothing */
    }
    if (this->started) {
        pthread_join(this->thread, NULL);
        this->started = false;
    }
    if (this->log) {
        pthread_mutex_lock(&this->state_lock);
        this->logo.records = LogWriter_records(this->log);
        this->logo.unsynced = this->logo.failed ? LogWriter_unsynced(this->log) : 0;
        bool failed = this->logo.failed;
        pthread_mutex_unlock(&this->state_lock);
        /* a clean stop, even by q or a signal, ends with the close marker:
         * a log without one ended by a crash, or was cut */
        char err[TT_ERRLEN];
        if (!failed && LogWriter_closeMarked(this->log, err) != TT_OK) {
            pthread_mutex_lock(&this->state_lock);
            this->logo.failed = true; /* every record is there, but the session cannot say it ended */
            snprintf(this->logo.error, sizeof this->logo.error, "%s", err);
            this->logo.unsynced = LogWriter_unsynced(this->log);
            pthread_mutex_unlock(&this->state_lock);
            failed = true;
        }
        if (failed) LogWriter_close(this->log);
        this->log = NULL;
    }
    if (this->tsv) {
        fclose(this->tsv);
        this->tsv = NULL;
    }
}

void Engine_delete(Engine *this) {
    if (!this || this->abandoned) return; /* its thread still runs: the process ends soon */
    if (this->started) {
        Engine_requestStop(this);
        Engine_wait(this);
    }
    if (this->log) LogWriter_close(this->log);
    if (this->tsv) fclose(this->tsv);
    BuilderPool_delete(this->pool);
    if (this->runner) this->cfg.target->runner_delete(this->runner);
    if (this->own_workdir && this->workdir[0]) TmpDir_remove(this->workdir);
    if (this->workdir_lock >= 0) close(this->workdir_lock);
    if (this->sched) TaskScheduler_delete(this->sched);
    for (int t = 0; t < this->n; t++) {
        TaskRun *r = &this->runs[t];
        if (r->strategy) r->strat->destroy(r->strategy);
        VisitedSet_done(&r->visited);
        free(r->pending);
        free(r->xfer_index);
        free(r->xfer_gflops);
        free(r->xfer_task);
        Task_done(&this->tasks[t]);
    }
    free(this->tasks);
    for (int x = 0; x < this->n_xtasks; x++)
        Task_done(&this->xtasks[x]);
    free(this->xtasks);
    free(this->runs);
    ResumeTrials_free(this->restored, this->n_restored);
    EventQueue_done(&this->events);
    pthread_mutex_destroy(&this->cmd_lock);
    pthread_cond_destroy(&this->cmd_cond);
    pthread_mutex_destroy(&this->state_lock);
    free(this->log_path);
    free(this->strategy_name);
    free(this->scheduler_name);
    free(this);
}
