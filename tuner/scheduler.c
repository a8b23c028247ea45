/* tuner/scheduler.c: which task gets the next round.
 *
 * "gradient": after a warm-up
 * round for every task, pick the task whose extra round is expected to lower
 * the objective f = sum_g weight_g * min_{i in g} best_i (g: the groups of
 * alternatives, a task alone is a group of one) the most, i.e. the most negative
 *   grad_i = weight_i * (alpha * backward_i + (1 - alpha) * forward_i)
 * where backward_i and forward_i are what task i's extrapolated and predicted
 * new best would take off its group's best (for a group of one: the change of
 * its own best).
 * "round-robin" serves every task once per cycle.
 *
 * TaskScheduler_next is a pure function of the recorded history and the
 * steering state passed in, so the engine may call it just to show the next
 * pick; only TaskScheduler_update / _restore change the history.
 */
#include "tuner/scheduler.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"

#define ALPHA 0.2
#define BETA 2.0
#define WINDOW 3
/* The stand-in for "no valid result yet": large but finite, so a task
 * without a result has a huge negative gradient (it needs one for the
 * network to run) while the arithmetic stays finite. */
#define NO_RESULT_S 1e10
/* ...but a task whose configs have all failed for this many rounds is most
 * likely broken (a template or toolchain problem), and the gradient rule would
 * then spend the whole remaining budget on it. It is parked instead: its
 * gradient becomes 0, so it only gets rounds when nothing else is eligible
 * (the engine's early stopping or the user decide about it). */
#define NO_RESULT_ROUNDS (WINDOW + 1)

typedef enum { SCHED_GRADIENT, SCHED_ROUND_ROBIN } SchedKind;

typedef struct TaskHistory {
    int rounds;              /* t_i */
    double best;             /* seconds, NO_RESULT_S when none */
    double ring[WINDOW + 1]; /* best after each of the last WINDOW + 1 rounds */
    bool served;             /* round-robin: had its turn in the current cycle */
} TaskHistory;

struct TaskScheduler {
    SchedKind kind;
    int n;
    TaskHistory *h;
    double roof_stop; /* 0 = off */
};

/* The schedulers by name; the first is the default. */
static const struct {
    const char *name;
    SchedKind kind;
} SCHEDULERS[] = {{"gradient", SCHED_GRADIENT}, {"round-robin", SCHED_ROUND_ROBIN}};
#define N_SCHEDULERS ((int)(sizeof SCHEDULERS / sizeof SCHEDULERS[0]))

const char *TaskScheduler_default(void) { return SCHEDULERS[0].name; }

static char scheduler_names[64];
static pthread_once_t scheduler_names_once = PTHREAD_ONCE_INIT;

static void scheduler_names_init(void) {
    for (int i = 0; i < N_SCHEDULERS; i++)
        Names_add(scheduler_names, sizeof scheduler_names, SCHEDULERS[i].name);
}

const char *TaskScheduler_names(void) {
    pthread_once(&scheduler_names_once, scheduler_names_init);
    return scheduler_names;
}

TaskScheduler *TaskScheduler_new(const char *strategy, int n_tasks, char *err) {
    if (!strategy) strategy = TaskScheduler_default();
    int found = -1;
    for (int i = 0; i < N_SCHEDULERS; i++)
        if (strcmp(SCHEDULERS[i].name, strategy) == 0) found = i;
    if (found < 0) {
        tt_fail(err, "unknown scheduler '%s'; valid schedulers: %s", strategy, TaskScheduler_names());
        return NULL;
    }
    SchedKind kind = SCHEDULERS[found].kind;
    if (n_tasks < 1) {
        tt_fail(err, "a scheduler needs at least one task (got %d)", n_tasks);
        return NULL;
    }
    TaskScheduler *this = calloc(1, sizeof *this);
    if (!this) abort();
    this->h = calloc((size_t)n_tasks, sizeof *this->h);
    if (!this->h) abort();
    this->kind = kind;
    this->n = n_tasks;
    for (int i = 0; i < n_tasks; i++) {
        this->h[i].best = NO_RESULT_S;
        for (int k = 0; k <= WINDOW; k++)
            this->h[i].ring[k] = NO_RESULT_S;
    }
    return this;
}

void TaskScheduler_delete(TaskScheduler *this) {
    if (!this) return;
    free(this->h);
    free(this);
}

static double clean_latency(double s) { return isfinite(s) && s > 0 && s < NO_RESULT_S ? s : NO_RESULT_S; }

void TaskScheduler_update(TaskScheduler *this, int task, double best_latency_s) {
    if (task < 0 || task >= this->n) return;
    TaskHistory *h = &this->h[task];
    h->best = clean_latency(best_latency_s);
    h->rounds++;
    h->ring[h->rounds % (WINDOW + 1)] = h->best;
    if (this->kind == SCHED_ROUND_ROBIN) {
        /* A task served twice means next() found nobody left in the cycle
         * (everyone served or not eligible): a new cycle begins with it. */
        if (h->served)
            for (int i = 0; i < this->n; i++)
                this->h[i].served = false;
        h->served = true;
    }
}

void TaskScheduler_restore(TaskScheduler *this, int task, int rounds, double best_latency_s) {
    if (task < 0 || task >= this->n || rounds < 0) return;
    TaskHistory *h = &this->h[task];
    h->rounds = rounds;
    h->best = clean_latency(best_latency_s);
    /* The log does not say when each improvement happened: a flat history
     * gives a zero backward gradient until new rounds refill the window. */
    for (int k = 0; k <= WINDOW; k++)
        h->ring[k] = h->best;
}

static bool eligible(const SchedTaskState *s) { return !s->paused && !s->done; }

void TaskScheduler_setRoofStop(TaskScheduler *this, double fraction) {
    this->roof_stop = isfinite(fraction) && fraction > 0 ? fraction : 0;
}

/* The lowest best of task i's alternatives other than i (NO_RESULT_S when none). */
static double others_best(const TaskScheduler *this, int i, const SchedTaskState *tasks) {
    double best = NO_RESULT_S;
    if (tasks[i].group == 0) return best;
    for (int j = 0; j < this->n; j++)
        if (j != i && tasks[j].group == tasks[i].group && this->h[j].best < best) best = this->h[j].best;
    return best;
}

static double group_best(const TaskScheduler *this, int i, const SchedTaskState *tasks) {
    double o = others_best(this, i, tasks);
    return this->h[i].best < o ? this->h[i].best : o;
}

double TaskScheduler_groupBest(const TaskScheduler *this, int i, const SchedTaskState *tasks) {
    if (i < 0 || i >= this->n) return INFINITY;
    double b = group_best(this, i, tasks);
    return b < NO_RESULT_S ? b : INFINITY;
}

bool TaskScheduler_atRoof(const TaskScheduler *this, int i, const SchedTaskState *tasks) {
    if (this->kind != SCHED_GRADIENT || this->roof_stop <= 0 || i < 0 || i >= this->n) return false;
    double best = group_best(this, i, tasks);
    return tasks[i].roof_s > 0 && best < NO_RESULT_S && tasks[i].roof_s / best >= this->roof_stop;
}

/* The gradient scheduler's eligibility: the steering state, then the roof stop. */
static bool eligible_gradient(const TaskScheduler *this, const SchedTaskState *tasks, int i) {
    return eligible(&tasks[i]) && (tasks[i].priority > 0 || !TaskScheduler_atRoof(this, i, tasks));
}

/* Higher priority first, then the lower id. */
static bool before(const SchedTaskState *tasks, int a, int b) {
    if (b < 0) return true;
    if (tasks[a].priority != tasks[b].priority) return tasks[a].priority > tasks[b].priority;
    return a < b;
}

static int clamp_priority(int p) { return p < -3 ? -3 : p > 3 ? 3 : p; }

/* log2 magnitude bucket of a FLOP count (similarity groups). */
static int flop_bucket(double flops) { return flops > 0 ? (int)floor(log2(flops)) : -1; }

static double gradient(const TaskScheduler *this, const SchedTaskState *tasks, int i) {
    const TaskHistory *h = &this->h[i];
    if (h->best >= NO_RESULT_S && h->rounds >= NO_RESULT_ROUNDS) return 0;
    double chain = tasks[i].weight; /* df/d(best_i) for the weighted sum */
    double backward = 0;
    if (h->rounds - 1 - WINDOW >= 0) {
        double now = h->ring[h->rounds % (WINDOW + 1)];
        double then = h->ring[(h->rounds - WINDOW) % (WINDOW + 1)]; /* after round t - WINDOW */
        backward = (now - then) / WINDOW;
    }
    /* the group's best now, and the best of the other members */
    double others = others_best(this, i, tasks), now = h->best < others ? h->best : others;
    double g1 = h->best - h->best / h->rounds;
    double g2 = BETA * 1e30;
    /* Similar tasks (same op, same power-of-two FLOP bucket) show what speed
     * this task could reach: its latency at the group's best FLOP rate. */
    int bucket = flop_bucket(tasks[i].flops), members = 0;
    double best_rate = 0;
    for (int j = 0; j < this->n; j++) {
        if (tasks[j].op != tasks[i].op || tasks[j].tmpl != tasks[i].tmpl || flop_bucket(tasks[j].flops) != bucket)
            continue;
        members++;
        double rate = tasks[j].flops / this->h[j].best;
        if (rate > best_rate) best_rate = rate;
    }
    if (members > 1 && best_rate > 0) g2 = BETA * tasks[i].flops / best_rate;
    /* what the predicted (forward) and the extrapolated (backward) new best
     * of task i would take off its group's best */
    double pred = g1 < g2 ? g1 : g2, extra = h->best + backward;
    double forward = (pred < others ? pred : others) - now;
    if (tasks[i].group != 0) backward = (extra < others ? extra : others) - now;
    double grad = chain * (ALPHA * backward + (1 - ALPHA) * forward);
    return grad * ldexp(1.0, clamp_priority(tasks[i].priority));
}

static int next_gradient(const TaskScheduler *this, const SchedTaskState *tasks) {
    /* Warm-up: a task that has never had a round goes first. */
    int pick = -1;
    for (int i = 0; i < this->n; i++)
        if (eligible_gradient(this, tasks, i) && this->h[i].rounds == 0 && before(tasks, i, pick)) pick = i;
    if (pick >= 0) return pick;

    double best_grad = 0;
    bool all_equal = true;
    double first = 0;
    bool have_first = false;
    for (int i = 0; i < this->n; i++) {
        if (!eligible_gradient(this, tasks, i)) continue;
        double g = gradient(this, tasks, i);
        if (!have_first) {
            first = g;
            have_first = true;
        } else if (g != first) {
            all_equal = false;
        }
        if (pick < 0 || g < best_grad || (g == best_grad && before(tasks, i, pick))) {
            pick = i;
            best_grad = g;
        }
    }
    if (pick < 0 || !all_equal) return pick;
    /* No gradient tells them apart: give the round to the least-tuned task
     * (a fixed rule keeps sessions reproducible). */
    int fair = -1;
    for (int i = 0; i < this->n; i++) {
        if (!eligible_gradient(this, tasks, i)) continue;
        if (fair < 0 || this->h[i].rounds < this->h[fair].rounds ||
            (this->h[i].rounds == this->h[fair].rounds && before(tasks, i, fair)))
            fair = i;
    }
    return fair;
}

static int next_round_robin(const TaskScheduler *this, const SchedTaskState *tasks) {
    int pick = -1;
    for (int i = 0; i < this->n; i++)
        if (eligible(&tasks[i]) && !this->h[i].served && before(tasks, i, pick)) pick = i;
    if (pick >= 0) return pick;
    /* Everyone eligible had a turn: the next cycle starts (update() resets). */
    for (int i = 0; i < this->n; i++)
        if (eligible(&tasks[i]) && before(tasks, i, pick)) pick = i;
    return pick;
}

int TaskScheduler_next(TaskScheduler *this, const SchedTaskState *tasks) {
    return this->kind == SCHED_GRADIENT ? next_gradient(this, tasks) : next_round_robin(this, tasks);
}
