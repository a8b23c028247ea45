/* bench/scheduler_bench.c: the gradient task scheduler against round-robin,
 * on the same network, target, tuner, seed and trial budget, in one run.
 *
 * Every number comes from real measurements: each scheduler drives a full
 * tuning session through the engine (tuner/engine.h) on the cpu target, with
 * its own fresh record log. The report gives, per scheduler, the estimated
 * total latency sum(weight x best latency) the session reaches, the curve of
 * that estimate over the budget, and how the trials were spread over the
 * tasks. This is a benchmark, not a test: timings vary from run to run, and
 * with a small budget the difference between the schedulers can be within
 * that noise (run it twice, or with --repeat, to see the spread).
 *
 *   scheduler_bench [--network resnet-18] [--ops conv2d,dense] [--trials 640] [--round 8]
 *                   [--tuner xgb] [--seed 1] [--repeat 1] [--dir /tmp] [--order gradient,round-robin]
 *                   [--early-stopping N] [--keep]
 *
 * --order also takes SCHEDULER/TUNER arms, to compare tuners on a whole
 * network the same way: --order gradient/xgb,gradient/ga
 * (TUNER:isolate = without learning across tasks).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "tuner/engine.h"
#include "tuner/net/network.h"
#include "tuner/task.h"

#define CURVE_POINTS 8

typedef struct Outcome {
    double est_ms;                 /* final estimated total latency */
    double curve_ms[CURVE_POINTS]; /* estimate when the budget was 1/8, 2/8, ... spent (-1 = none yet) */
    double wall_s;
    int trials;
    int *task_trials; /* per task */
    double *task_best_ms;
} Outcome;

static void usage(FILE *out) {
    fprintf(out,
            "usage: scheduler_bench [--network NAME] [--ops LIST] [--trials N] [--round K] [--tuner T]\n"
            "                       [--seed S] [--repeat R] [--dir DIR] [--order A,B] [--early-stopping N] [--keep]\n"
            "Tunes the network once per scheduler (gradient, round-robin) with the same budget and\n"
            "reports the estimated total latency each reaches. --order A,B names the two arms: schedulers,\n"
            "or SCHEDULER/TUNER pairs (gradient/xgb,gradient/ga; xgb:isolate = no learning across tasks).\n"
            "--round is the number of measurements per scheduler round (the scheduler decides once per\n"
            "round; default 8). --early-stopping N ends a task after N trials without improvement\n"
            "(default off); --keep keeps the logs.\n");
}

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
            for (int j = 0; j <= i; j++)
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

/* An arm of the comparison: "SCHEDULER", or "SCHEDULER/TUNER" to compare
 * tuners too ("gradient/xgb", "gradient/ga"); a tuner ending in ":isolate"
 * runs with EngineConfig.isolate (tasks do not learn from each other). */
static void arm_config(const char *arm, const EngineConfig *base, EngineConfig *cfg, char *sched, char *tuner) {
    *cfg = *base;
    snprintf(sched, 32, "%s", arm);
    char *slash = strchr(sched, '/');
    snprintf(tuner, 32, "%s", slash ? slash + 1 : base->strategy);
    if (slash) *slash = '\0';
    char *iso = strstr(tuner, ":isolate");
    if (iso) {
        *iso = '\0';
        cfg->isolate = true;
    }
    cfg->scheduler = sched;
    cfg->strategy = tuner;
}

static Status run_session(const char *arm, const char *network, const NetworkOptions *nopt, const EngineConfig *base,
                          const char *log_path, Outcome *o, char *err) {
    Task *tasks = NULL;
    int n = 0;
    if (make_tasks(network, nopt, &base->dev, &tasks, &n, err) != TT_OK) return TT_ERR;
    EngineConfig cfg;
    char scheduler[32], tuner[32];
    arm_config(arm, base, &cfg, scheduler, tuner);
    cfg.log_path = log_path;
    unlink(log_path); /* a fresh session, never a resume */
    char tsv[1100];
    snprintf(tsv, sizeof tsv, "%s.tsv", log_path);
    unlink(tsv);

    Engine *e = Engine_new(&cfg, tasks, n, err); /* owns tasks from here */
    if (!e) return TT_ERR;
    if (Engine_start(e, NULL, 0, err) != TT_OK) {
        Engine_delete(e);
        return TT_ERR;
    }
    for (int k = 0; k < CURVE_POINTS; k++)
        o->curve_ms[k] = -1;
    double t0 = clock_mono();
    EngineEvent ev[64];
    struct pollfd pfd = {.fd = Engine_eventFd(e), .events = POLLIN};
    double last_print = t0;
    while (!Engine_finished(e)) {
        poll(&pfd, 1, 500);
        int got;
        while ((got = Engine_drainEvents(e, ev, 64)) > 0) {
            for (int i = 0; i < got; i++) {
                if (ev[i].kind == EV_ROUND && isfinite(ev[i].est_latency_s)) {
                    /* the estimate at each eighth of the budget */
                    int k = (int)((double)ev[i].trials * CURVE_POINTS / cfg.trials) - 1;
                    for (int j = 0; j <= k && j < CURVE_POINTS; j++)
                        if (o->curve_ms[j] < 0) o->curve_ms[j] = ev[i].est_latency_s * 1e3;
                }
                EngineEvent_done(&ev[i]);
            }
        }
        if (clock_mono() - last_print > 30) {
            SessionSnapshot s;
            Engine_snapshot(e, &s);
            fprintf(stderr, "  [%s] %d/%d trials, %.0f s, estimate %.3f ms\n", arm, s.trials, s.budget, s.elapsed_s,
                    isfinite(s.est_latency_s) ? s.est_latency_s * 1e3 : -1.0);
            SessionSnapshot_done(&s);
            last_print = clock_mono();
        }
    }
    Engine_wait(e);
    o->wall_s = clock_mono() - t0;
    SessionSnapshot s;
    Engine_snapshot(e, &s);
    o->est_ms = isfinite(s.est_latency_s) ? s.est_latency_s * 1e3 : INFINITY;
    o->trials = s.trials;
    o->task_trials = calloc((size_t)s.n_tasks, sizeof *o->task_trials);
    o->task_best_ms = calloc((size_t)s.n_tasks, sizeof *o->task_best_ms);
    for (int i = 0; i < s.n_tasks; i++) {
        o->task_trials[i] = s.rows[i].trials;
        o->task_best_ms[i] = s.rows[i].best_latency_s * 1e3;
    }
    SessionSnapshot_done(&s);
    Engine_delete(e);
    return TT_OK;
}

int main(int argc, char **argv) {
    static const struct option longopts[] = {{"network", required_argument, 0, 'n'},
                                             {"ops", required_argument, 0, 'o'},
                                             {"trials", required_argument, 0, 't'},
                                             {"round", required_argument, 0, 'r'},
                                             {"tuner", required_argument, 0, 'u'},
                                             {"seed", required_argument, 0, 's'},
                                             {"repeat", required_argument, 0, 'R'},
                                             {"dir", required_argument, 0, 'd'},
                                             {"order", required_argument, 0, 'O'},
                                             {"early-stopping", required_argument, 0, 'e'},
                                             {"keep", no_argument, 0, 'k'},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    const char *network = "resnet-18", *ops = NULL, *tuner = "xgb", *dir = NULL, *order = "gradient,round-robin";
    int trials = 640, round = 8, repeat = 1, early = 0;
    bool keep = false;
    unsigned long long seed = 1;
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
            seed = strtoull(optarg, NULL, 10);
            break;
        case 'R':
            repeat = atoi(optarg);
            break;
        case 'd':
            dir = optarg;
            break;
        case 'O':
            order = optarg;
            break;
        case 'e':
            early = atoi(optarg);
            break;
        case 'k':
            keep = true;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (trials < 1 || round < 1 || repeat < 1 || early < 0) {
        usage(stderr);
        return 2;
    }
    char err[TT_ERRLEN] = "";
    NetworkOptions nopt;
    NetworkOptions_defaults(&nopt);
    if (ops && Network_parseOps(ops, &nopt.op_mask, err) != TT_OK) {
        fprintf(stderr, "scheduler_bench: %s\n", err);
        return 2;
    }
    const Target *target = Target_find("cpu");
    if (!target) {
        fprintf(stderr, "scheduler_bench: this build has no cpu target\n");
        return 1;
    }
    EngineConfig cfg;
    EngineConfig_defaults(&cfg);
    cfg.target = target;
    if (target->probe(&cfg.dev, err) != TT_OK) {
        fprintf(stderr, "scheduler_bench: cpu target: %s\n", err);
        return 1;
    }
    cfg.strategy = tuner;
    cfg.trials = trials;
    cfg.batch = round;
    cfg.seed = seed;
    cfg.early_stopping = early;
    char tmpdir[512];
    if (!dir) {
        const char *t = getenv("TMPDIR");
        snprintf(tmpdir, sizeof tmpdir, "%s", t && *t ? t : "/tmp");
        dir = tmpdir;
    }

    /* the two arms, in the order given (the first runs on a cold machine) */
    char names[2][32];
    if (sscanf(order, "%31[^,],%31s", names[0], names[1]) != 2 || strchr(names[1], ',')) {
        fprintf(stderr, "scheduler_bench: --order wants two schedulers (gradient,round-robin) or two\n"
                        "scheduler/tuner arms (gradient/xgb,gradient/ga)\n");
        return 2;
    }

    Task *probe_tasks = NULL;
    int n_tasks = 0;
    if (make_tasks(network, &nopt, &cfg.dev, &probe_tasks, &n_tasks, err) != TT_OK) {
        fprintf(stderr, "scheduler_bench: %s\n", err);
        return 2;
    }
    printf("scheduler_bench: %s (%d tasks), target cpu (%s), tuner %s, %d trials, %d measures per round, seed %llu, "
           "early stopping %d\n",
           network, n_tasks, cfg.dev.name, tuner, trials, round, seed, early);

    double sum_est[2] = {0, 0};
    for (int rep = 0; rep < repeat; rep++) {
        Outcome out[2];
        memset(out, 0, sizeof out);
        /* odd repeats run the schedulers in the other order, so that a drift in
         * machine load over the run does not always favour the same one */
        for (int kk = 0; kk < 2; kk++) {
            int k = rep % 2 ? 1 - kk : kk;
            char log_path[1024];
            char file_arm[32];
            snprintf(file_arm, sizeof file_arm, "%s", names[k]);
            for (char *ch = file_arm; *ch; ch++)
                if (*ch == '/' || *ch == ':') *ch = '-';
            snprintf(log_path, sizeof log_path, "%s/scheduler_bench-%d-%s.log", dir, (int)getpid(), file_arm);
            fprintf(stderr, "running %s (repeat %d) ...\n", names[k], rep + 1);
            if (run_session(names[k], network, &nopt, &cfg, log_path, &out[k], err) != TT_OK) {
                fprintf(stderr, "scheduler_bench: %s: %s\n", names[k], err);
                return 1;
            }
            if (keep) {
                fprintf(stderr, "kept %s (and .tsv)\n", log_path);
            } else {
                char tsv[1100];
                snprintf(tsv, sizeof tsv, "%s.tsv", log_path);
                unlink(log_path);
                unlink(tsv);
            }
        }
        printf("\nrepeat %d\n%-20s %14s %8s %9s   estimate (ms) at 1/8 .. 8/8 of the budget\n", rep + 1, "arm",
               "est. total ms", "trials", "wall s");
        for (int k = 0; k < 2; k++) {
            printf("%-20s %14.4f %8d %9.1f  ", names[k], out[k].est_ms, out[k].trials, out[k].wall_s);
            for (int j = 0; j < CURVE_POINTS; j++)
                printf(" %7.3f", out[k].curve_ms[j]);
            printf("\n");
            sum_est[k] += out[k].est_ms;
        }
        printf("\n%4s %6s %9s  %-28s %10s %10s %10s %10s\n", "task", "weight", "GFLOP", "label", "trials:A", "trials:B",
               "best ms:A", "best ms:B");
        for (int i = 0; i < n_tasks; i++)
            printf("%4d %6.0f %9.4f  %-28s %10d %10d %10.4f %10.4f\n", i, probe_tasks[i].weight,
                   probe_tasks[i].flops / 1e9, probe_tasks[i].label, out[0].task_trials[i], out[1].task_trials[i],
                   out[0].task_best_ms[i], out[1].task_best_ms[i]);
        printf("(A = %s, B = %s)\n", names[0], names[1]);
        for (int k = 0; k < 2; k++) {
            free(out[k].task_trials);
            free(out[k].task_best_ms);
        }
    }
    printf("\nEstimated total latency (mean of %d): %s %.4f ms, %s %.4f ms (%s/%s = %.3f)\n", repeat, names[0],
           sum_est[0] / repeat, names[1], sum_est[1] / repeat, names[0], names[1], sum_est[0] / sum_est[1]);
    for (int i = 0; i < n_tasks; i++)
        Task_done(&probe_tasks[i]);
    free(probe_tasks);
    return 0;
}
