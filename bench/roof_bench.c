/* bench/roof_bench.c: the trials the gradient scheduler's roof stop saves.
 *
 * Per seed, two real tuning sessions of the same network (ResNet-18 by
 * default) through the engine on the cpu target, same tuner, seed and
 * budget, each with a fresh log: one with the roof stop off (--roof-stop 0),
 * one with it on (default 0.9). The roofline comes from the machine's cached
 * figures (measured first if there are none; `tunetop devices`). From the
 * estimate of total latency after every round it reports, at equal final
 * estimated latency:
 *   - T_off: the trials the session without the stop needed to reach its own
 *     final estimate E_off (its last improvement);
 *   - T_on: the trials the session with the stop needed to reach E_off (or
 *     "not reached");
 *   - saved = T_off - T_on, and the budget the stop left unspent (a session
 *     whose every task is at its roof ends early);
 * then the medians over the seeds. This is a benchmark: timings vary, and
 * with a small budget the two sessions differ by noise too.
 *
 *   roof_bench [--network resnet-18] [--ops conv2d,dense] [--trials 384] [--round 16] [--tuner xgb]
 *              [--seeds 3] [--roof-stop 0.9] [--threads 0] [--dir /tmp]
 */
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "kernels/targets/machine.h"
#include "tuner/engine.h"
#include "tuner/net/network.h"
#include "tuner/task.h"

#define MAX_ROUNDS 4096

typedef struct Curve {
    int n;
    int trials[MAX_ROUNDS];
    double est_ms[MAX_ROUNDS];
    double final_ms;
    int used;    /* trials the session measured */
    int at_roof; /* tasks in state "at roof" at the end */
    int n_tasks;
    double floor_ms; /* the latency at every task's roof */
    double wall_s;
} Curve;

static Status make_tasks(const char *network, const NetworkOptions *nopt, const DeviceInfo *dev, Task **out, int *n,
                         char *err) {
    NetworkTask *nt = NULL;
    NetworkUntuned *un = NULL;
    int n_nt = 0, n_un = 0;
    if (Network_extract(network, nopt, &nt, &n_nt, &un, &n_un, err) != TT_OK) return TT_ERR;
    free(un);
    Task *tasks = calloc((size_t)n_nt, sizeof *tasks);
    if (!tasks) abort();
    for (int i = 0; i < n_nt; i++) {
        if (Task_init(&tasks[i], i, &nt[i].wl, nt[i].weight, FAMILY_CPU, dev, err) != TT_OK) {
            for (int j = 0; j < i; j++)
                Task_done(&tasks[j]);
            free(tasks);
            free(nt);
            return TT_ERR;
        }
    }
    free(nt);
    *out = tasks;
    *n = n_nt;
    return TT_OK;
}

static Status run_session(const char *network, const NetworkOptions *nopt, const EngineConfig *base, double stop,
                          const char *log_path, Curve *c, char *err) {
    Task *tasks = NULL;
    int n = 0;
    if (make_tasks(network, nopt, &base->dev, &tasks, &n, err) != TT_OK) return TT_ERR;
    EngineConfig cfg = *base;
    cfg.roof_stop = stop;
    cfg.log_path = log_path;
    unlink(log_path);
    char tsv[1100];
    snprintf(tsv, sizeof tsv, "%s.tsv", log_path);
    unlink(tsv);
    Engine *e = Engine_new(&cfg, tasks, n, err);
    if (!e) return TT_ERR;
    if (Engine_start(e, NULL, 0, err) != TT_OK) {
        Engine_delete(e);
        return TT_ERR;
    }
    memset(c, 0, sizeof *c);
    double t0 = clock_mono(), last_print = t0;
    EngineEvent ev[64];
    struct pollfd pfd = {.fd = Engine_eventFd(e), .events = POLLIN};
    while (!Engine_finished(e)) {
        poll(&pfd, 1, 500);
        int got;
        while ((got = Engine_drainEvents(e, ev, 64)) > 0) {
            for (int i = 0; i < got; i++) {
                if (ev[i].kind == EV_ROUND && isfinite(ev[i].est_latency_s) && c->n < MAX_ROUNDS) {
                    c->trials[c->n] = ev[i].trials;
                    c->est_ms[c->n++] = ev[i].est_latency_s * 1e3;
                }
                EngineEvent_done(&ev[i]);
            }
        }
        if (clock_mono() - last_print > 30) {
            SessionSnapshot s;
            Engine_snapshot(e, &s);
            fprintf(stderr, "  [roof stop %.2f] %d/%d trials, %.0f s, estimate %.3f ms\n", stop, s.trials, s.budget,
                    s.elapsed_s, isfinite(s.est_latency_s) ? s.est_latency_s * 1e3 : -1.0);
            SessionSnapshot_done(&s);
            last_print = clock_mono();
        }
    }
    Engine_wait(e);
    c->wall_s = clock_mono() - t0;
    SessionSnapshot s;
    Engine_snapshot(e, &s);
    c->final_ms = isfinite(s.est_latency_s) ? s.est_latency_s * 1e3 : INFINITY;
    c->used = s.trials;
    c->n_tasks = s.n_tasks;
    c->floor_ms = s.roof_latency_s * 1e3;
    for (int i = 0; i < s.n_tasks; i++)
        c->at_roof += s.rows[i].state == TASK_AT_ROOF;
    SessionSnapshot_done(&s);
    Engine_delete(e);
    return TT_OK;
}

/* Trials after which the curve first is <= target (-1 if never). */
static int trials_to(const Curve *c, double target_ms) {
    for (int i = 0; i < c->n; i++)
        if (c->est_ms[i] <= target_ms * (1 + 1e-12)) return c->trials[i];
    return -1;
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

static int median_int(int *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_int);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void usage(FILE *out) {
    fprintf(out, "usage: roof_bench [--network NAME] [--ops LIST] [--trials N] [--round K] [--tuner T] [--seeds S]\n"
                 "                  [--roof-stop F] [--threads T] [--dir DIR]\n"
                 "Per seed, one session without and one with the roof stop; the trials each needs to reach the\n"
                 "final estimated latency of the session without it, and the medians over the seeds.\n");
}

int main(int argc, char **argv) {
    static const struct option longopts[] = {{"network", required_argument, 0, 'n'},
                                             {"ops", required_argument, 0, 'o'},
                                             {"trials", required_argument, 0, 't'},
                                             {"round", required_argument, 0, 'r'},
                                             {"tuner", required_argument, 0, 'u'},
                                             {"seeds", required_argument, 0, 's'},
                                             {"roof-stop", required_argument, 0, 'F'},
                                             {"threads", required_argument, 0, 'T'},
                                             {"dir", required_argument, 0, 'd'},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    const char *network = "resnet-18", *ops = NULL, *tuner = "xgb", *dir = NULL;
    int trials = 384, round = 16, seeds = 3, threads = 0;
    double stop = 0.9;
    int c;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'n':
            network = optarg;
            break;
        case 'o':
            ops = optarg;
            break;
        case 't':
            trials = atoi(optarg);
            break;
        case 'r':
            round = atoi(optarg);
            break;
        case 'u':
            tuner = optarg;
            break;
        case 's':
            seeds = atoi(optarg);
            break;
        case 'F':
            stop = atof(optarg);
            break;
        case 'T':
            threads = atoi(optarg);
            break;
        case 'd':
            dir = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (trials < 1 || round < 1 || seeds < 1 || seeds > 32 || !(stop > 0)) {
        usage(stderr);
        return 2;
    }
    char err[TT_ERRLEN];
    NetworkOptions nopt;
    NetworkOptions_defaults(&nopt);
    if (ops && Network_parseOps(ops, &nopt.op_mask, err) != TT_OK) {
        fprintf(stderr, "roof_bench: %s\n", err);
        return 2;
    }
    EngineConfig base;
    EngineConfig_defaults(&base);
    base.target = Target_find("cpu");
    if (!base.target || base.target->probe(&base.dev, err) != TT_OK) {
        fprintf(stderr, "roof_bench: cpu target: %s\n", base.target ? err : "not built in");
        return 1;
    }
    char note[TT_ERRLEN] = "";
    if (Machine_getCpu(&base.dev, false, NULL, &base.machine, note, sizeof note, err) != TT_OK) {
        fprintf(stderr, "roof_bench: machine figures: %s\n", err);
        return 1;
    }
    base.have_machine = true;
    base.strategy = tuner;
    base.scheduler = "gradient";
    base.trials = trials;
    base.batch = round;
    base.measure.threads = threads;
    const char *tmp = dir ? dir : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char log_path[1024];
    snprintf(log_path, sizeof log_path, "%s/roof_bench_%d.log", tmp, (int)getpid());

    double load[3] = {0, 0, 0};
    getloadavg(load, 3);
    char thr[16];
    snprintf(thr, sizeof thr, threads ? "%d" : "all", threads);
    printf("roof_bench | %s | %s, tuner %s, gradient scheduler, %d trials, rounds of %d, %s threads | load %.2f\n",
           base.dev.name, network, tuner, trials, round, thr, load[0]);
    printf("machine figures: peak %.1f / %.1f GFLOPS (1 / %d cores), memory %.1f / %.1f GB/s%s%s\n\n",
           base.machine.peak1_gflops, base.machine.peak_gflops, base.machine.cores, base.machine.bw1_gbs,
           base.machine.bw_gbs, note[0] ? "; " : "", note);
    printf("%4s | %10s %6s %6s | %10s %6s %6s %7s %7s | %6s %9s\n", "seed", "E_off ms", "T_off", "used", "E_on ms",
           "T_on", "used", "atroof", "floor", "saved", "unspent");
    int saved[32], unspent[32], t_off[32], t_on[32], n_ok = 0, never = 0;
    for (int s = 1; s <= seeds; s++) {
        base.seed = (uint64_t)s;
        Curve off, on;
        if (run_session(network, &nopt, &base, 0, log_path, &off, err) != TT_OK ||
            run_session(network, &nopt, &base, stop, log_path, &on, err) != TT_OK) {
            fprintf(stderr, "roof_bench: %s\n", err);
            return 1;
        }
        int a = trials_to(&off, off.final_ms), b = trials_to(&on, off.final_ms);
        char bs[16], sv[16];
        if (b >= 0) {
            snprintf(bs, sizeof bs, "%d", b);
            snprintf(sv, sizeof sv, "%d", a - b);
            saved[n_ok] = a - b;
            t_off[n_ok] = a;
            t_on[n_ok] = b;
            unspent[n_ok] = trials - on.used;
            n_ok++;
        } else {
            snprintf(bs, sizeof bs, "never");
            snprintf(sv, sizeof sv, "-");
            never++;
        }
        printf("%4d | %10.4f %6d %6d | %10.4f %6s %6d %4d/%-2d %7.4f | %6s %9d   (%.0f s + %.0f s)\n", s, off.final_ms,
               a, off.used, on.final_ms, bs, on.used, on.at_roof, on.n_tasks, on.floor_ms, sv, trials - on.used,
               off.wall_s, on.wall_s);
        fflush(stdout);
    }
    unlink(log_path);
    char tsv[1100];
    snprintf(tsv, sizeof tsv, "%s.tsv", log_path);
    unlink(tsv);
    getloadavg(load, 3);
    if (n_ok)
        printf("\nmedian over %d seed%s: T_off %d, T_on %d, saved %d trials; budget left unspent by the stop %d%s\n",
               n_ok, n_ok == 1 ? "" : "s", median_int(t_off, n_ok), median_int(t_on, n_ok), median_int(saved, n_ok),
               median_int(unspent, n_ok), never ? " (seeds where the stop never reached E_off are left out)" : "");
    else
        printf("\nthe sessions with the roof stop never reached the final estimate of those without it\n");
    printf("E = final estimated total latency; T = trials to reach E_off; used = trials measured; atroof = tasks at\n"
           "their roof at the end; floor = latency if every task were at its roof; load average at the end %.2f\n",
           load[0]);
    return 0;
}
