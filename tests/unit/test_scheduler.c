/* tests/unit/test_scheduler.c: the task scheduler on synthetic tasks.
 *
 * Each simulated task has a best-latency curve that falls with the rounds
 * spent on it, best(r) = base * (floor + (1 - floor) / (1 + r)), so that an
 * extra round helps most where weight x latency is largest. */
#include <math.h>

#include "kernels/workload.h"
#include "tests/check.h"
#include "tuner/scheduler.h"

#define MAXT 8

typedef struct Sim {
    int n;
    SchedTaskState st[MAXT];
    double base[MAXT]; /* seconds */
    double floor_frac[MAXT];
    int rounds[MAXT];
    int picks[64]; /* first picks, in order */
} Sim;

static double sim_best(const Sim *s, int i) {
    return s->base[i] * (s->floor_frac[i] + (1 - s->floor_frac[i]) / (1.0 + s->rounds[i]));
}

static double sim_objective(const Sim *s) {
    double f = 0;
    for (int i = 0; i < s->n; i++)
        f += s->st[i].weight * sim_best(s, i);
    return f;
}

static void sim_add(Sim *s, double weight, double base, double floor_frac, double flops, int op) {
    int i = s->n++;
    memset(&s->st[i], 0, sizeof s->st[i]);
    s->st[i].weight = weight;
    s->st[i].flops = flops;
    s->st[i].op = op;
    s->base[i] = base;
    s->floor_frac[i] = floor_frac;
    s->rounds[i] = 0;
}

/* Runs up to `rounds` rounds; returns how many ran (fewer when next() says -1). */
static int sim_run(Sim *s, TaskScheduler *ts, int rounds) {
    for (int k = 0; k < rounds; k++) {
        int t = TaskScheduler_next(ts, s->st);
        if (t < 0) return k;
        CHECK(t < s->n);
        if (t >= s->n) return k;
        if (k < 64) s->picks[k] = t;
        s->rounds[t]++;
        TaskScheduler_update(ts, t, sim_best(s, t));
    }
    return rounds;
}

/* Task 0 has the largest weight x latency share (10 x 10 ms against 1 x 1 ms). */
static void make_skewed(Sim *s) {
    memset(s, 0, sizeof *s);
    sim_add(s, 10, 10e-3, 0.1, 1e9, OP_CONV2D);
    sim_add(s, 1, 1e-3, 0.1, 1e8, OP_DENSE);
    sim_add(s, 1, 1e-3, 0.1, 1e7, OP_BATCH_MATMUL);
    sim_add(s, 2, 1e-3, 0.1, 1e6, OP_DEPTHWISE_CONV2D);
}

TEST(test_unknown_strategy) {
    char err[TT_ERRLEN] = "";
    CHECK(TaskScheduler_new("greedy", 3, err) == NULL);
    CHECK_CONTAINS(err, "greedy");
    CHECK_CONTAINS(err, "round-robin");
    CHECK(TaskScheduler_new("gradient", 0, err) == NULL);
    TaskScheduler *ts = TaskScheduler_new("round-robin", 2, err);
    CHECK(ts != NULL);
    TaskScheduler_delete(ts);
}

TEST(test_warmup_every_task_once) {
    Sim s;
    make_skewed(&s);
    TaskScheduler *ts = TaskScheduler_new("gradient", s.n, NULL);
    sim_run(&s, ts, s.n);
    for (int i = 0; i < s.n; i++)
        CHECK_EQ_INT(s.rounds[i], 1);
    TaskScheduler_delete(ts);
}

TEST(test_gradient_beats_round_robin) {
    Sim g, r;
    make_skewed(&g);
    make_skewed(&r);
    TaskScheduler *tg = TaskScheduler_new("gradient", g.n, NULL);
    TaskScheduler *tr = TaskScheduler_new("round-robin", r.n, NULL);
    const int rounds = 40;
    CHECK_EQ_INT(sim_run(&g, tg, rounds), rounds);
    CHECK_EQ_INT(sim_run(&r, tr, rounds), rounds);
    /* round-robin shares evenly */
    for (int i = 0; i < r.n; i++)
        CHECK_EQ_INT(r.rounds[i], rounds / r.n);
    /* gradient moves rounds to the dominant task, and the objective is lower */
    CHECK(g.rounds[0] > r.rounds[0]);
    CHECK(g.rounds[0] > rounds / 2);
    double fg = sim_objective(&g), fr = sim_objective(&r);
    printf("objective after %d rounds: gradient %.4f ms (task0 %d rounds), round-robin %.4f ms\n", rounds, fg * 1e3,
           g.rounds[0], fr * 1e3);
    CHECK(fg < fr);
    /* every task still got its warm-up round */
    for (int i = 0; i < g.n; i++)
        CHECK(g.rounds[i] >= 1);
    TaskScheduler_delete(tg);
    TaskScheduler_delete(tr);
}

TEST(test_paused_task_gets_no_rounds) {
    const char *names[2] = {"gradient", "round-robin"};
    for (int k = 0; k < 2; k++) {
        Sim s;
        make_skewed(&s);
        s.st[0].paused = true; /* even the dominant task */
        TaskScheduler *ts = TaskScheduler_new(names[k], s.n, NULL);
        CHECK_EQ_INT(sim_run(&s, ts, 30), 30);
        CHECK_EQ_INT(s.rounds[0], 0);
        /* resumed: it is picked (its warm-up round comes first) */
        s.st[0].paused = false;
        CHECK_EQ_INT(TaskScheduler_next(ts, s.st), 0);
        TaskScheduler_delete(ts);
    }
}

TEST(test_done_tasks_skipped_and_minus_one) {
    const char *names[2] = {"gradient", "round-robin"};
    for (int k = 0; k < 2; k++) {
        Sim s;
        make_skewed(&s);
        TaskScheduler *ts = TaskScheduler_new(names[k], s.n, NULL);
        sim_run(&s, ts, 8);
        int before0 = s.rounds[0];
        s.st[0].done = true;
        s.st[2].done = true;
        sim_run(&s, ts, 20);
        CHECK_EQ_INT(s.rounds[0], before0);
        CHECK_EQ_INT(s.rounds[1] + s.rounds[3], 28 - before0 - s.rounds[2]);
        s.st[1].done = true;
        s.st[3].paused = true;
        CHECK_EQ_INT(TaskScheduler_next(ts, s.st), -1);
        s.st[3].paused = false;
        CHECK_EQ_INT(TaskScheduler_next(ts, s.st), 3);
        s.st[3].done = true;
        CHECK_EQ_INT(TaskScheduler_next(ts, s.st), -1);
        TaskScheduler_delete(ts);
    }
}

/* Three identical tasks: only priority tells them apart. */
static void make_equal(Sim *s) {
    memset(s, 0, sizeof *s);
    for (int i = 0; i < 3; i++)
        sim_add(s, 1, 2e-3, 0.1, 1e9 * (i + 1) * 3, OP_CONV2D);
}

TEST(test_priority_shifts_rounds_gradient) {
    Sim a, b;
    make_equal(&a);
    make_equal(&b);
    b.st[2].priority = 2;
    TaskScheduler *ta = TaskScheduler_new("gradient", a.n, NULL);
    TaskScheduler *tb = TaskScheduler_new("gradient", b.n, NULL);
    sim_run(&a, ta, 30);
    sim_run(&b, tb, 30);
    CHECK(b.rounds[2] > a.rounds[2]);
    CHECK(b.rounds[2] > b.rounds[0]);
    /* warm-up still covers everyone, the prioritised task first */
    CHECK_EQ_INT(b.picks[0], 2);
    CHECK(b.rounds[0] >= 1 && b.rounds[1] >= 1);
    /* negative priority: fewer rounds than its equals */
    Sim c;
    make_equal(&c);
    c.st[0].priority = -2;
    TaskScheduler *tc = TaskScheduler_new("gradient", c.n, NULL);
    sim_run(&c, tc, 30);
    CHECK(c.rounds[0] < c.rounds[1]);
    TaskScheduler_delete(ta);
    TaskScheduler_delete(tb);
    TaskScheduler_delete(tc);
}

TEST(test_priority_round_robin_order) {
    Sim s;
    make_equal(&s);
    s.st[1].priority = 1;
    s.st[2].priority = -1;
    TaskScheduler *ts = TaskScheduler_new("round-robin", s.n, NULL);
    sim_run(&s, ts, 9);
    /* each cycle: priority 1 first, then 0, then -1; everyone equal rounds */
    int want[9] = {1, 0, 2, 1, 0, 2, 1, 0, 2};
    for (int k = 0; k < 9; k++)
        CHECK_EQ_INT(s.picks[k], want[k]);
    for (int i = 0; i < 3; i++)
        CHECK_EQ_INT(s.rounds[i], 3);
    TaskScheduler_delete(ts);
}

TEST(test_round_robin_is_pure_next) {
    /* next() without update() must not advance the cycle (the engine may peek) */
    Sim s;
    make_equal(&s);
    TaskScheduler *ts = TaskScheduler_new("round-robin", s.n, NULL);
    CHECK_EQ_INT(TaskScheduler_next(ts, s.st), 0);
    CHECK_EQ_INT(TaskScheduler_next(ts, s.st), 0);
    TaskScheduler_update(ts, 0, 1e-3);
    CHECK_EQ_INT(TaskScheduler_next(ts, s.st), 1);
    TaskScheduler_delete(ts);
}

TEST(test_restore_skips_warmup) {
    Sim s;
    make_skewed(&s);
    TaskScheduler *ts = TaskScheduler_new("gradient", s.n, NULL);
    /* tasks 0..2 were tuned in an earlier session; task 3 never was */
    for (int i = 0; i < 3; i++) {
        s.rounds[i] = 5;
        TaskScheduler_restore(ts, i, 5, sim_best(&s, i));
    }
    CHECK_EQ_INT(TaskScheduler_next(ts, s.st), 3);
    s.rounds[3]++;
    TaskScheduler_update(ts, 3, sim_best(&s, 3));
    /* then the dominant restored task, not another warm-up of 0..2 */
    CHECK_EQ_INT(TaskScheduler_next(ts, s.st), 0);
    TaskScheduler_delete(ts);
}

TEST(test_no_result_task_first) {
    /* a task whose rounds all failed (+inf best) is worth the most: the network needs it */
    Sim s;
    make_skewed(&s);
    TaskScheduler *ts = TaskScheduler_new("gradient", s.n, NULL);
    for (int i = 0; i < s.n; i++) {
        s.rounds[i]++;
        TaskScheduler_update(ts, i, i == 2 ? INFINITY : sim_best(&s, i));
    }
    CHECK_EQ_INT(TaskScheduler_next(ts, s.st), 2);
    /* ...for a few rounds; a task that keeps failing must not eat the budget */
    int picks2 = 0;
    for (int k = 0; k < 40; k++) {
        int t = TaskScheduler_next(ts, s.st);
        CHECK(t >= 0);
        if (t < 0) break;
        picks2 += t == 2;
        s.rounds[t]++;
        TaskScheduler_update(ts, t, t == 2 ? INFINITY : sim_best(&s, t));
    }
    CHECK_EQ_INT(picks2, 3); /* 4 failing rounds in all, then parked */
    /* parked, it still runs when it is the only task left */
    for (int i = 0; i < s.n; i++)
        s.st[i].done = i != 2;
    CHECK_EQ_INT(TaskScheduler_next(ts, s.st), 2);
    TaskScheduler_delete(ts);
}

TEST(test_similarity_group) {
    /* Two conv tasks of the same FLOP bucket: task 1 runs at a tenth of task
     * 0's FLOP rate, so the group says it can go much faster and it is
     * picked although its own history predicts less (the g2 term). */
    TaskScheduler *ts = TaskScheduler_new("gradient", 2, NULL);
    SchedTaskState st[2];
    memset(st, 0, sizeof st);
    st[0] = (SchedTaskState){.weight = 1, .flops = 1.5e9, .op = OP_CONV2D};
    st[1] = (SchedTaskState){.weight = 1, .flops = 1.2e9, .op = OP_CONV2D};
    /* task 0: 10 rounds, 1.5 ms (1000 GFLOPS); task 1: 50 rounds, 10 ms (120 GFLOPS) */
    TaskScheduler_restore(ts, 0, 10, 1.5e-3);
    TaskScheduler_restore(ts, 1, 50, 10e-3);
    CHECK_EQ_INT(TaskScheduler_next(ts, st), 1);
    /* In different groups (another op) only the tasks' own histories speak:
     * forward = -best/t is -0.2 ms for task 1 and -0.15 ms for task 0, so
     * weight 3 on task 0 makes it the pick (no group would keep task 1). */
    st[0].weight = 3;
    st[1].op = OP_DENSE;
    CHECK_EQ_INT(TaskScheduler_next(ts, st), 0);
    TaskScheduler_delete(ts);
}

/* The roof stop: task 0 (the dominant one) reaches 92% of its roof at its
 * 10th round (88% at the 9th), and then gets no more;
 * a raised priority gives it rounds again; without the stop it keeps them. */
TEST(test_roof_stop) {
    Sim s, off;
    make_skewed(&s);
    make_skewed(&off);
    for (int i = 0; i < s.n; i++) {
        double roof = s.base[i] * (s.floor_frac[i] + (1 - s.floor_frac[i]) / 11.0) * 0.92;
        s.st[i].roof_s = off.st[i].roof_s = i == 0 ? roof : roof * 0.01; /* the others stay far from theirs */
    }
    TaskScheduler *ts = TaskScheduler_new("gradient", s.n, NULL);
    TaskScheduler *toff = TaskScheduler_new("gradient", off.n, NULL);
    TaskScheduler_setRoofStop(ts, 0.9);
    TaskScheduler_setRoofStop(toff, 0);
    CHECK(!TaskScheduler_atRoof(ts, 0, s.st)); /* no result yet: never at roof */
    const int rounds = 60;
    CHECK_EQ_INT(sim_run(&s, ts, rounds), rounds);
    CHECK_EQ_INT(sim_run(&off, toff, rounds), rounds);
    CHECK(TaskScheduler_atRoof(ts, 0, s.st));
    CHECK(!TaskScheduler_atRoof(toff, 0, off.st)); /* the stop is off */
    CHECK(!TaskScheduler_atRoof(ts, 1, s.st));
    int at_stop = s.rounds[0];
    CHECK_EQ_INT(at_stop, 10);
    CHECK(at_stop < off.rounds[0]);
    printf("roof stop: task 0 stopped at %d rounds of %d (without the stop: %d)\n", at_stop, rounds, off.rounds[0]);
    /* more rounds: none for task 0 */
    CHECK_EQ_INT(sim_run(&s, ts, 20), 20);
    CHECK_EQ_INT(s.rounds[0], at_stop);
    /* a priority raise gives it rounds again */
    s.st[0].priority = 1;
    CHECK_EQ_INT(TaskScheduler_next(ts, s.st), 0);
    CHECK_EQ_INT(sim_run(&s, ts, 10), 10);
    CHECK(s.rounds[0] > at_stop);
    /* back to normal: held again */
    s.st[0].priority = 0;
    int now = s.rounds[0];
    CHECK_EQ_INT(sim_run(&s, ts, 10), 10);
    CHECK_EQ_INT(s.rounds[0], now);
    /* every task at its roof: nothing left to pick */
    for (int i = 1; i < s.n; i++)
        s.st[i].roof_s = sim_best(&s, i);
    CHECK_EQ_INT(TaskScheduler_next(ts, s.st), -1);
    /* round-robin ignores the stop */
    TaskScheduler *rr = TaskScheduler_new("round-robin", s.n, NULL);
    TaskScheduler_setRoofStop(rr, 0.9);
    for (int i = 0; i < s.n; i++)
        TaskScheduler_restore(rr, i, 1, sim_best(&s, i));
    CHECK(!TaskScheduler_atRoof(rr, 0, s.st));
    CHECK(TaskScheduler_next(rr, s.st) >= 0);
    TaskScheduler_delete(rr);
    TaskScheduler_delete(ts);
    TaskScheduler_delete(toff);
}

/* A group of alternatives: the same workload under two templates, tasks 0
 * (direct: plateaus at 8 ms) and 1 (Winograd: falls to 1.8 ms), and a
 * third task alone. The objective counts the group once, with its lower
 * best, so the direct member, which cannot beat the Winograd one, gets fewer
 * rounds than when the two are counted as separate tasks, and the objective
 * over the group ends lower. */
static void make_group(Sim *s, bool grouped) {
    memset(s, 0, sizeof *s);
    sim_add(s, 4, 10e-3, 0.8, 1e9, OP_CONV2D);
    sim_add(s, 4, 6e-3, 0.3, 1e9, OP_CONV2D);
    sim_add(s, 1, 2e-3, 0.1, 1e8, OP_DENSE);
    s->st[1].tmpl = 1;
    if (grouped) s->st[0].group = s->st[1].group = 1;
}

static double group_objective(const Sim *s) {
    double a = sim_best(s, 0), b = sim_best(s, 1);
    return s->st[0].weight * (a < b ? a : b) + s->st[2].weight * sim_best(s, 2);
}

TEST(test_group_of_alternatives) {
    Sim g, sep;
    make_group(&g, true);
    make_group(&sep, false);
    TaskScheduler *tg = TaskScheduler_new("gradient", g.n, NULL);
    TaskScheduler *ts = TaskScheduler_new("gradient", sep.n, NULL);
    const int rounds = 30;
    CHECK_EQ_INT(sim_run(&g, tg, rounds), rounds);
    CHECK_EQ_INT(sim_run(&sep, ts, rounds), rounds);
    /* both members had their warm-up round */
    CHECK(g.rounds[0] >= 1 && g.rounds[1] >= 1);
    printf("group: direct member %d rounds (%d counted apart), Winograd %d (%d), objective %.3f ms (%.3f)\n",
           g.rounds[0], sep.rounds[0], g.rounds[1], sep.rounds[1], group_objective(&g) * 1e3,
           group_objective(&sep) * 1e3);
    CHECK(g.rounds[0] < sep.rounds[0]);
    CHECK(group_objective(&g) <= group_objective(&sep));
    /* the group's best is the lower of its members' */
    CHECK_NEAR(TaskScheduler_groupBest(tg, 0, g.st), sim_best(&g, 1), 1e-12);
    CHECK_NEAR(TaskScheduler_groupBest(tg, 2, g.st), sim_best(&g, 2), 1e-12);
    CHECK_NEAR(TaskScheduler_groupBest(ts, 0, sep.st), sim_best(&sep, 0), 1e-12);
    TaskScheduler_delete(tg);
    TaskScheduler_delete(ts);
}

/* The roof stop of a group: each member has its own roof (the direct one at
 * 7 ms, the Winograd one at 1 ms, from its own arithmetic). The direct member
 * stops as soon as the group's best (the Winograd member's) reaches 0.9 of
 * the direct roof, though its own best is far from it; the Winograd member
 * goes on until the group reaches its own roof. */
TEST(test_group_roof_stop) {
    Sim g, sep;
    make_group(&g, true);
    make_group(&sep, false);
    g.st[0].roof_s = sep.st[0].roof_s = 7e-3;
    g.st[1].roof_s = sep.st[1].roof_s = 1e-3;
    TaskScheduler *tg = TaskScheduler_new("gradient", g.n, NULL);
    TaskScheduler *ts = TaskScheduler_new("gradient", sep.n, NULL);
    TaskScheduler_setRoofStop(tg, 0.9);
    TaskScheduler_setRoofStop(ts, 0.9);
    CHECK(!TaskScheduler_atRoof(tg, 0, g.st)); /* no result yet */
    CHECK_EQ_INT(sim_run(&g, tg, 20), 20);
    CHECK_EQ_INT(sim_run(&sep, ts, 20), 20);
    CHECK(sim_best(&g, 0) > 7e-3 / 0.9);      /* its own best is not at its roof... */
    CHECK(TaskScheduler_atRoof(tg, 0, g.st)); /* ...but the group's is */
    CHECK(!TaskScheduler_atRoof(tg, 1, g.st));
    CHECK(!TaskScheduler_atRoof(ts, 0, sep.st)); /* apart: never at its roof */
    /* it got its warm-up round and no more: the Winograd member was past the direct roof after its first */
    CHECK_EQ_INT(g.rounds[0], 1);
    CHECK(sep.rounds[0] > 1);
    /* the Winograd member at its own roof: the whole group stops */
    g.st[1].roof_s = sim_best(&g, 1);
    CHECK(TaskScheduler_atRoof(tg, 1, g.st));
    for (int k = 0; k < 5; k++)
        CHECK(TaskScheduler_next(tg, g.st) == 2);
    TaskScheduler_delete(tg);
    TaskScheduler_delete(ts);
}

int main(void) {
    RUN(test_unknown_strategy);
    RUN(test_warmup_every_task_once);
    RUN(test_gradient_beats_round_robin);
    RUN(test_paused_task_gets_no_rounds);
    RUN(test_done_tasks_skipped_and_minus_one);
    RUN(test_priority_shifts_rounds_gradient);
    RUN(test_priority_round_robin_order);
    RUN(test_round_robin_is_pure_next);
    RUN(test_restore_skips_warmup);
    RUN(test_no_result_task_first);
    RUN(test_similarity_group);
    RUN(test_roof_stop);
    RUN(test_group_of_alternatives);
    RUN(test_group_roof_stop);
    return check_summary();
}
