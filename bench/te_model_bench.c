/* bench/te_model_bench.c: the cost model of template-free search
 * (tuner/search/te_model.h) on measured schedules: how well it ranks held-out
 * records of a task, and what predicting a whole population costs against
 * the time a round of measurements takes.
 *
 *   te_model_bench --log FILE --expr A.te [--expr B.te ...] [--set NAME=V ...]
 *                  [--train F] [--seeds S] [--population P] [--trials N] [--tunetop PATH]
 *                  [--depth D] [--rounds R] [--eta E] [--label rank|best|mix] [--balance 0|1]
 *                  [--task-features 0|1] [--max-programs N] [--hist 0|1]
 *
 * When FILE does not exist it is made first by
 *   tunetop tune --expr A.te ... --set ... --trials N --threads 1 --scheduler round-robin
 *                --no-roof --headless --log FILE
 * (the random schedules of te.cpu, measured and checked by the worker).
 *
 * Per task and seed, the task's records are shuffled and split: a share F
 * (default 0.5) trains, the rest is held out. Three models are fitted: on the
 * task's training share alone ("own"), on it plus every record of the other
 * tasks ("own+others"), and on the other tasks alone ("others": the warm
 * start, before the task has a single measurement). Each predicts the
 * held-out schedules; the table gives the medians over the seeds of
 * Spearman's and Kendall's rank correlation with the measured GFLOPS (held-out
 * schedules that ran) and of top-1: the measured GFLOPS of the schedule the
 * model ranks first over the best held out. "repeats" is the measurement's
 * own noise: Spearman between the first and the second timing of every
 * record that has two (the most a model of these labels could reach).
 *
 * Prediction: P (default 2048) random schedules of the task scored by the
 * own+others model, timed (features with lowering, trees), against the
 * wall time of a round of 64 measurements in the log (mean gap between
 * consecutive records, pauses over a minute left out, times 64).
 *
 * --search T (with --search-seeds "1 2 3", --work DIR): instead of the above,
 * whether the model guides the search. Per expression and seed, four real
 * sessions of T trials (tune --expr ... --threads 1 --seed S --no-roof):
 * "model" (evolution ranked by the cost model, the default), "no model"
 * (--cost-model none: children ranked by their measured ancestors), "random
 * sketch" (--eps-greedy 1: every measured candidate a random annotation of a
 * sketch, the random sampling of the same space) and "sampler" (--tuner
 * random: the plain random schedules). From each log: the best GFLOPS after
 * T trials, and the trials it took to reach 95% of a reference: the arm's own
 * final best, and the best any arm of that seed reached ("common"; > T when
 * never). Medians over the seeds, and the model arm's over the random
 * sketch arm's trials (the target: <= 1/3). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/rng.h"
#include "kernels/templates/te/te_lower.h"
#include "records/log.h"
#include "tuner/search/te_model.h"

#define MAX_EXPR 16

typedef struct Rec {
    Steps steps;
    double gflops, ts;
    double rep[2]; /* the first two timings (s), 0 when fewer */
} Rec;

typedef struct Task {
    const char *path;
    TeProgram *g;
    TeDag d;
    Rec *rec;
    int n, cap, ok;
} Task;

/* CPU seconds of the calling thread: the model runs on it alone (one XGBoost
 * thread), so this is what it costs even when other processes hold the cores. */
static double thread_cpu(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int usage(void) {
    fprintf(stderr, "usage: te_model_bench --log FILE --expr A.te [--expr B.te ...] [--set NAME=V ...] [--train F]\n"
                    "                      [--seeds S] [--population P] [--trials N] [--tunetop PATH]\n"
                    "                      [--depth D] [--rounds R] [--eta E] [--label rank|best|mix] [--balance 0|1]\n"
                    "                      [--task-features 0|1] [--max-programs N] [--hist 0|1]\n"
                    "                      (the model's options, default TeModel_defaults)\n"
                    "       te_model_bench --search T --expr A.te [--expr B.te ...] [--set NAME=V ...]\n"
                    "                      [--search-seeds \"1 2 3\"] [--work DIR] [--tunetop PATH]\n");
    return 2;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    if (n == 0) return NAN;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Kendall's tau-b (ties in either side allowed). */
static double kendall(const double *a, const double *b, int n) {
    double conc = 0, disc = 0, ta = 0, tb = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            double x = a[i] - a[j], y = b[i] - b[j];
            if (x == 0 && y == 0) continue;
            if (x == 0)
                ta++;
            else if (y == 0)
                tb++;
            else if ((x > 0) == (y > 0))
                conc++;
            else
                disc++;
        }
    double d = sqrt((conc + disc + ta) * (conc + disc + tb));
    return d > 0 ? (conc - disc) / d : 0;
}

/* tunetop beside this executable's folder: <build>/bench/.. */
static const char *tunetop_path(void) {
    static char tt[4096];
    ssize_t len = readlink("/proc/self/exe", tt, sizeof tt - 16);
    tt[len > 0 ? len : 0] = '\0';
    char *slash = strrchr(tt, '/');
    if (slash) *slash = '\0';
    strcat(tt, "/../tunetop");
    return tt;
}

static int run_child(const char *tunetop, char **argv, const char *out) {
    fflush(stdout); /* else the child's freopen writes our buffered lines again */
    pid_t pid = fork();
    if (pid == 0) {
        if (out && !freopen(out, "w", stdout)) _exit(126);
        if (out) dup2(1, 2);
        execv(tunetop, argv);
        perror(tunetop);
        _exit(127);
    }
    int st = 0;
    return pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) ? -1 : WEXITSTATUS(st);
}

static int make_log(const char *tunetop, const char *log, char **exprs, int n_expr, char **sets, int n_sets,
                    int trials) {
    char *argv[8 + 2 * MAX_EXPR + 2 * 32 + 16];
    char tr[32];
    int a = 0;
    snprintf(tr, sizeof tr, "%d", trials);
    argv[a++] = (char *)tunetop;
    argv[a++] = "tune";
    for (int i = 0; i < n_expr; i++)
        argv[a++] = "--expr", argv[a++] = exprs[i];
    for (int i = 0; i < n_sets; i++)
        argv[a++] = "--set", argv[a++] = sets[i];
    char *rest[] = {"--trials",  tr,           "--threads",     "1",   "--scheduler", "round-robin",
                    "--no-roof", "--headless", "--table-every", "600", "--log",       (char *)log};
    for (size_t i = 0; i < sizeof rest / sizeof rest[0]; i++)
        argv[a++] = rest[i];
    argv[a] = NULL;
    printf("making the log:");
    for (int i = 0; i < a; i++)
        printf(" %s", argv[i]);
    printf("\n");
    fflush(stdout);
    if (run_child(tunetop, argv, NULL) != 0) {
        fprintf(stderr, "te_model_bench: making the log failed\n");
        return 1;
    }
    return 0;
}

static void read_log(const char *path, Task *tasks, int n_tasks, double *gaps, int *n_gaps) {
    char err[TT_ERRLEN];
    LogReader *r;
    LogHeader h;
    *n_gaps = 0;
    if (LogReader_open(path, &r, &h, err) != TT_OK) {
        fprintf(stderr, "te_model_bench: %s\n", err);
        exit(1);
    }
    Record rec;
    Record_init(&rec);
    double last_ts = 0;
    while (LogReader_next(r, &rec, err) == LOG_RECORD) {
        if (last_ts > 0 && rec.timestamp > last_ts && *n_gaps < 100000) gaps[(*n_gaps)++] = rec.timestamp - last_ts;
        last_ts = rec.timestamp;
        if (!rec.steps) continue;
        for (int t = 0; t < n_tasks; t++) {
            Task *k = &tasks[t];
            const char *p = strstr(rec.task_key, k->d.key);
            if (!p) continue;
            if (k->n == k->cap) {
                k->cap = k->cap ? 2 * k->cap : 256;
                k->rec = realloc(k->rec, sizeof(Rec) * (size_t)k->cap);
            }
            Rec *x = &k->rec[k->n];
            if (Steps_decode(rec.steps, &x->steps, err) != TT_OK) break;
            x->gflops = Record_gflops(&rec, k->d.flops >= 1 ? k->d.flops : 1);
            x->ts = rec.timestamp;
            x->rep[0] = rec.error_no == 0 && rec.n_costs >= 2 ? rec.costs[0] : 0;
            x->rep[1] = rec.error_no == 0 && rec.n_costs >= 2 ? rec.costs[1] : 0;
            k->ok += x->gflops > 0;
            k->n++;
            break;
        }
    }
    Record_done(&rec);
    LogReader_close(r);
}

static void add_all(TeModel *m, const Task *t, const int *idx, int n) {
    char err[TT_ERRLEN];
    Steps *s = malloc(sizeof(Steps) * (size_t)(n ? n : 1));
    double *g = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++)
        s[i] = t->rec[idx ? idx[i] : i].steps, g[i] = t->rec[idx ? idx[i] : i].gflops;
    if (TeModel_add(m, &t->d, s, g, n, NULL, err) != TT_OK) fprintf(stderr, "te_model_bench: %s\n", err);
    free(s);
    free(g);
}

/* Spearman, Kendall and top-1 of model m on the held-out records (those that ran). */
static void score(TeModel *m, const Task *t, const int *held, int n_held, double *sp, double *kd, double *top) {
    char err[TT_ERRLEN];
    Steps *s = malloc(sizeof(Steps) * (size_t)n_held);
    float *p = malloc(sizeof(float) * (size_t)n_held);
    double *a = malloc(sizeof(double) * (size_t)n_held), *b = malloc(sizeof(double) * (size_t)n_held);
    int n = 0;
    for (int i = 0; i < n_held; i++)
        if (t->rec[held[i]].gflops > 0) s[n++] = t->rec[held[i]].steps;
    *sp = *kd = *top = NAN;
    if (n >= 2 && TeModel_predict(m, &t->d, s, n, p, err) == TT_OK) {
        int k = 0, best_pred = 0;
        double best = 0;
        for (int i = 0; i < n_held; i++) {
            if (t->rec[held[i]].gflops <= 0) continue;
            a[k] = p[k], b[k] = t->rec[held[i]].gflops;
            if (a[k] > a[best_pred]) best_pred = k;
            if (b[k] > best) best = b[k];
            k++;
        }
        *sp = rank_correlation(a, b, n);
        *kd = kendall(a, b, n);
        *top = b[best_pred] / best;
    } else if (n >= 2) {
        fprintf(stderr, "te_model_bench: %s\n", err);
    }
    free(s);
    free(p);
    free(a);
    free(b);
}

/* ---- --search: does the model guide the search? ------------------------------ */

#define ARMS 4
static const char *const ARM_NAME[ARMS] = {"model", "no model", "random sketch", "sampler"};
static const char *const ARM_FILE[ARMS] = {"model", "nomodel", "randsketch", "sampler"};

/* The best-so-far GFLOPS after each record of a log (n <= cap), from the expression's FLOPs. */
static int best_curve(const char *path, double flops, double *curve, int cap) {
    char err[TT_ERRLEN];
    LogReader *r;
    LogHeader h;
    if (LogReader_open(path, &r, &h, err) != TT_OK) {
        fprintf(stderr, "te_model_bench: %s\n", err);
        return 0;
    }
    Record rec;
    Record_init(&rec);
    int n = 0;
    double best = 0;
    while (n < cap && LogReader_next(r, &rec, err) == LOG_RECORD) {
        double g = Record_gflops(&rec, flops >= 1 ? flops : 1);
        if (g > best) best = g;
        curve[n++] = best;
    }
    Record_done(&rec);
    LogReader_close(r);
    return n;
}

static int trials_to(const double *curve, int n, double target) {
    for (int i = 0; i < n; i++)
        if (curve[i] >= target) return i + 1;
    return n + 1; /* never: printed as > T */
}

/* NAME=VALUE pairs of --set into ts (names kept in names); false on one without '='. */
static bool parse_sets(char **sets, int n_sets, TeSet *ts, char names[][64]) {
    for (int i = 0; i < n_sets; i++) {
        const char *eq = strchr(sets[i], '=');
        if (!eq) return false;
        snprintf(names[i], 64, "%.*s", (int)(eq - sets[i]), sets[i]);
        ts[i] = (TeSet){names[i], atoll(eq + 1)};
    }
    return true;
}

static int search_compare(const char *tunetop, char **exprs, int n_expr, char **sets, int n_sets, int trials,
                          const char *seed_list, const char *work) {
    char dir[512];
    if (work)
        snprintf(dir, sizeof dir, "%s", work);
    else {
        snprintf(dir, sizeof dir, "/tmp/te_search.XXXXXX");
        if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
    }
    char cmd[600];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    if (system(cmd) != 0) return 1;
    int seed[16], n_seeds = 0;
    for (const char *p = seed_list; *p && n_seeds < 16;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p) break;
        seed[n_seeds++] = (int)v;
        p = end;
    }
    if (n_seeds == 0) return usage();
    char host[256] = "";
    FILE *c = popen("lscpu | sed -n 's/^Model name: *//p'", "r");
    if (c && fgets(host, sizeof host, c)) host[strcspn(host, "\n")] = '\0';
    if (c) pclose(c);
    double la[3] = {0};
    getloadavg(la, 3);
    printf("te_model_bench --search %d: %s, %ld cores; load average at start %.2f %.2f %.2f; seeds %s; logs in %s\n",
           trials, host, sysconf(_SC_NPROCESSORS_ONLN), la[0], la[1], la[2], seed_list, dir);
    fflush(stdout);
    char err[TT_ERRLEN];
    TeSet ts[32];
    char names[32][64];
    if (!parse_sets(sets, n_sets, ts, names)) return usage();
    printf("\n%-14s %-14s | %11s | %15s | %15s\n", "expression", "arm", "best GFLOPS", "to 95% own best",
           "to 95% common");
    for (int e = 0; e < n_expr; e++) {
        TeProgram *g = TeProgram_load(exprs[e], ts, n_sets, err);
        TeDag d;
        if (!g || TeDag_build(&d, g, err) != TT_OK) {
            fprintf(stderr, "te_model_bench: %s\n", err);
            return 1;
        }
        const char *name = strrchr(exprs[e], '/') ? strrchr(exprs[e], '/') + 1 : exprs[e];
        double best[ARMS][16], own[ARMS][16], common[ARMS][16];
        for (int s = 0; s < n_seeds; s++) {
            double final[ARMS] = {0}, all = 0;
            static double curves[ARMS][100000];
            int n[ARMS];
            for (int a = 0; a < ARMS; a++) {
                char log[700], out[720], tr[32], sd[32];
                snprintf(log, sizeof log, "%s/%s.%s.%d.log", dir, name, ARM_FILE[a], seed[s]);
                snprintf(out, sizeof out, "%s.out", log);
                snprintf(tr, sizeof tr, "%d", trials);
                snprintf(sd, sizeof sd, "%d", seed[s]);
                char *argv[64];
                int k = 0;
                argv[k++] = (char *)tunetop;
                argv[k++] = "tune";
                argv[k++] = "--expr";
                argv[k++] = exprs[e];
                for (int i = 0; i < n_sets && k < 40; i++)
                    argv[k++] = "--set", argv[k++] = sets[i];
                char *rest[] = {"--trials", tr,          "--threads",  "1",     "--seed",
                                sd,         "--no-roof", "--headless", "--log", log};
                for (size_t i = 0; i < sizeof rest / sizeof rest[0]; i++)
                    argv[k++] = rest[i];
                if (a == 1) argv[k++] = "--cost-model", argv[k++] = "none";
                if (a == 2) argv[k++] = "--eps-greedy", argv[k++] = "1";
                if (a == 3) argv[k++] = "--tuner", argv[k++] = "random";
                argv[k] = NULL;
                if (access(log, R_OK) != 0 && run_child(tunetop, argv, out) != 0)
                    fprintf(stderr, "te_model_bench: %s %s seed %d failed (see %s)\n", name, ARM_NAME[a], seed[s], out);
                n[a] = best_curve(log, d.flops, curves[a], trials < 100000 ? trials : 100000);
                final[a] = n[a] ? curves[a][n[a] - 1] : 0;
                if (final[a] > all) all = final[a];
            }
            for (int a = 0; a < ARMS; a++) {
                best[a][s] = final[a];
                own[a][s] = trials_to(curves[a], n[a], 0.95 * final[a]);
                common[a][s] = trials_to(curves[a], n[a], 0.95 * all);
            }
        }
        double mo[ARMS], mc[ARMS];
        for (int a = 0; a < ARMS; a++) {
            double b = median(best[a], n_seeds);
            mo[a] = median(own[a], n_seeds);
            mc[a] = median(common[a], n_seeds);
            char cs[32];
            if (mc[a] > trials)
                snprintf(cs, sizeof cs, "> %d", trials);
            else
                snprintf(cs, sizeof cs, "%.0f", mc[a]);
            printf("%-14s %-14s | %11.2f | %15.0f | %15s\n", name, ARM_NAME[a], b, mo[a], cs);
        }
        printf("%-14s model / random sketch trials to 95%%: own best %.2f, common best %.2f (target <= 0.33)\n", name,
               mo[0] / mo[2], mc[0] / mc[2]);
        fflush(stdout);
        TeProgram_delete(g);
    }
    getloadavg(la, 3);
    printf("load average at end %.2f %.2f %.2f\n", la[0], la[1], la[2]);
    return 0;
}

int main(int argc, char **argv) {
    const char *log = NULL, *tunetop = NULL;
    char *exprs[MAX_EXPR], *sets[32];
    int n_expr = 0, n_sets = 0, seeds = 5, population = 2048, trials = 600, depth = 0, rounds = 0;
    double eta = 0;
    double train = 0.5;
    int search = 0;
    const char *search_seeds = "1 2 3", *work = NULL;
    TeModelOptions opt;
    TeModel_defaults(&opt);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) return usage();
        if (strcmp(a, "--log") == 0)
            log = v;
        else if (strcmp(a, "--expr") == 0 && n_expr < MAX_EXPR)
            exprs[n_expr++] = (char *)v;
        else if (strcmp(a, "--set") == 0 && n_sets < 32)
            sets[n_sets++] = (char *)v;
        else if (strcmp(a, "--train") == 0)
            train = atof(v);
        else if (strcmp(a, "--seeds") == 0)
            seeds = atoi(v);
        else if (strcmp(a, "--population") == 0)
            population = atoi(v);
        else if (strcmp(a, "--trials") == 0)
            trials = atoi(v);
        else if (strcmp(a, "--depth") == 0)
            depth = atoi(v);
        else if (strcmp(a, "--rounds") == 0)
            rounds = atoi(v);
        else if (strcmp(a, "--eta") == 0)
            eta = atof(v);
        else if (strcmp(a, "--label") == 0 &&
                 (strcmp(v, "rank") == 0 || strcmp(v, "best") == 0 || strcmp(v, "mix") == 0))
            opt.label = strcmp(v, "rank") == 0 ? TE_LABEL_RANK : strcmp(v, "best") == 0 ? TE_LABEL_BEST : TE_LABEL_MIX;
        else if (strcmp(a, "--balance") == 0)
            opt.balance = atoi(v) != 0;
        else if (strcmp(a, "--task-features") == 0)
            opt.task_features = atoi(v) != 0;
        else if (strcmp(a, "--max-programs") == 0)
            opt.max_programs = atoi(v);
        else if (strcmp(a, "--hist") == 0)
            opt.xgb.hist = atoi(v) != 0;
        else if (strcmp(a, "--search") == 0)
            search = atoi(v);
        else if (strcmp(a, "--search-seeds") == 0)
            search_seeds = v;
        else if (strcmp(a, "--work") == 0)
            work = v;
        else if (strcmp(a, "--tunetop") == 0)
            tunetop = v;
        else
            return usage();
        i++;
    }
    if (!tunetop) tunetop = tunetop_path();
    if (search > 0) return search_compare(tunetop, exprs, n_expr, sets, n_sets, search, search_seeds, work);
    if (!log || n_expr == 0 || train <= 0 || train >= 1 || seeds < 1 || population < 1) return usage();
    if (!tunetop) tunetop = tunetop_path();
    if (access(log, R_OK) != 0 && make_log(tunetop, log, exprs, n_expr, sets, n_sets, trials) != 0) return 1;

    TeSet ts[32];
    char names[32][64];
    if (!parse_sets(sets, n_sets, ts, names)) return usage();
    Task tasks[MAX_EXPR];
    memset(tasks, 0, sizeof tasks);
    char err[TT_ERRLEN];
    for (int i = 0; i < n_expr; i++) {
        tasks[i].path = exprs[i];
        tasks[i].g = TeProgram_load(exprs[i], ts, n_sets, err);
        if (!tasks[i].g || TeDag_build(&tasks[i].d, tasks[i].g, err) != TT_OK) {
            fprintf(stderr, "te_model_bench: %s\n", err);
            return 1;
        }
    }
    double *gaps = malloc(sizeof(double) * 100000);
    int n_gaps;
    read_log(log, tasks, n_expr, gaps, &n_gaps);
    /* records arrive in chunks (built together, then timed one by one): the
     * mean gap, leaving out pauses over a minute (a resumed log's sessions) */
    double sum_gaps = 0;
    int n_used = 0;
    for (int i = 0; i < n_gaps; i++)
        if (gaps[i] < 60) sum_gaps += gaps[i], n_used++;
    double round_s = n_used ? 64 * sum_gaps / n_used : NAN;

    char host[256] = "";
    FILE *c = popen("lscpu | sed -n 's/^Model name: *//p'", "r");
    if (c && fgets(host, sizeof host, c)) host[strcspn(host, "\n")] = '\0';
    if (c) pclose(c);
    double la[3] = {0};
    getloadavg(la, 3);
    printf("te_model_bench: %s; train %.0f%% / held out %.0f%% of each task's records, %d seeds (medians)\n", log,
           100 * train, 100 * (1 - train), seeds);
    printf("machine: %s, %ld cores online; load average at start %.2f %.2f %.2f\n", host, sysconf(_SC_NPROCESSORS_ONLN),
           la[0], la[1], la[2]);
    if (depth > 0) opt.xgb.max_depth = depth;
    if (rounds > 0) opt.xgb.rounds = rounds;
    if (eta > 0) opt.xgb.eta = eta;
    printf("model: XGBoost pack-sum, max_depth %d, eta %.2f, %d rounds, %s, %d thread(s); label %s, tasks %s, "
           "task features %s, at most %d programs per fit\n\n",
           opt.xgb.max_depth, opt.xgb.eta, opt.xgb.rounds, opt.xgb.hist ? "hist" : "exact", opt.xgb.nthread,
           opt.label == TE_LABEL_RANK   ? "rank in task"
           : opt.label == TE_LABEL_BEST ? "share of task best"
                                        : "mix",
           opt.balance ? "weigh the same" : "weigh by records", opt.task_features ? "on" : "off", opt.max_programs);
    printf("%-14s %7s %5s | %-21s | %-21s | %-21s | %9s | %7s\n", "task", "records", "ran", "own: spear kend top1",
           "own+others: same", "others only: same", "fit cpu s", "repeats");

    for (int t = 0; t < n_expr; t++) {
        Task *k = &tasks[t];
        const char *name = strrchr(k->path, '/') ? strrchr(k->path, '/') + 1 : k->path;
        if (k->n < 8) {
            printf("%-14s %7d %5d | too few records to split\n", name, k->n, k->ok);
            continue;
        }
        double m[3][3][64], fit_s[64];
        int *idx = malloc(sizeof(int) * (size_t)k->n);
        for (int s = 0; s < seeds && s < 64; s++) {
            Rng rng;
            Rng_seed(&rng, 1000 + (uint64_t)s);
            for (int i = 0; i < k->n; i++)
                idx[i] = i;
            for (int i = k->n - 1; i > 0; i--) {
                int j = (int)(Rng_next(&rng) % (uint64_t)(i + 1)), x = idx[i];
                idx[i] = idx[j], idx[j] = x;
            }
            int n_train = (int)(train * k->n);
            for (int variant = 0; variant < 3; variant++) {
                TeModel *model = TeModel_new(&opt, err);
                if (!model) {
                    fprintf(stderr, "te_model_bench: %s\n", err);
                    return 1;
                }
                if (variant < 2) add_all(model, k, idx, n_train);
                if (variant > 0)
                    for (int o = 0; o < n_expr; o++)
                        if (o != t) add_all(model, &tasks[o], NULL, tasks[o].n);
                double c0 = thread_cpu();
                Status fitted = TeModel_fit(model, err);
                double fit_cpu = thread_cpu() - c0;
                if (fitted != TT_OK) {
                    m[variant][0][s] = m[variant][1][s] = m[variant][2][s] = NAN;
                } else {
                    score(model, k, idx + n_train, k->n - n_train, &m[variant][0][s], &m[variant][1][s],
                          &m[variant][2][s]);
                    if (variant == 1) fit_s[s] = fit_cpu;
                }
                TeModel_delete(model);
            }
        }
        printf("%-14s %7d %5d |", name, k->n, k->ok);
        for (int variant = 0; variant < 3; variant++)
            printf(" %6.3f %6.3f %6.3f |", median(m[variant][0], seeds), median(m[variant][1], seeds),
                   median(m[variant][2], seeds));
        /* the measurement's own noise: Spearman between each record's first and second timing */
        double *r0 = malloc(sizeof(double) * (size_t)k->n), *r1 = malloc(sizeof(double) * (size_t)k->n);
        int nr = 0;
        for (int i = 0; i < k->n; i++)
            if (k->rec[i].rep[0] > 0 && k->rec[i].rep[1] > 0) r0[nr] = k->rec[i].rep[0], r1[nr++] = k->rec[i].rep[1];
        printf(" %9.3f | %7.3f\n", median(fit_s, seeds), rank_correlation(r0, r1, nr));
        free(r0);
        free(r1);
        free(idx);
    }

    printf("\nprediction of a population (own+others model on every record of the log):\n");
    printf("%-14s %6s %11s %9s %9s %8s %12s %12s %9s\n", "task", "progs", "features ms", "trees ms", "wall ms",
           "cpu ms", "cpu ms/1000", "round s(log)", "share");
    TeModel *model = TeModel_new(&opt, err);
    for (int t = 0; t < n_expr; t++)
        add_all(model, &tasks[t], NULL, tasks[t].n);
    double c0 = thread_cpu();
    if (TeModel_fit(model, err) != TT_OK) {
        fprintf(stderr, "te_model_bench: %s\n", err);
        return 1;
    }
    printf("(fit on %d programs of %d tasks: %.3f s wall, %.3f s cpu)\n", TeModel_programs(model), n_expr,
           TeModel_times(model).fit_s, thread_cpu() - c0);
    Steps *pop = malloc(sizeof(Steps) * (size_t)population);
    float *out = malloc(sizeof(float) * (size_t)population);
    for (int t = 0; t < n_expr; t++) {
        Rng rng;
        Rng_seed(&rng, 77 + (uint64_t)t);
        for (int i = 0; i < population; i++)
            TeSchedule_sample(&tasks[t].d, &rng, 0, &pop[i]);
        double f[5], tr[5], tot[5], cp[5];
        for (int rep = 0; rep < 5; rep++) {
            double t0 = clock_mono(), c0 = thread_cpu();
            if (TeModel_predict(model, &tasks[t].d, pop, population, out, err) != TT_OK) {
                fprintf(stderr, "te_model_bench: %s\n", err);
                return 1;
            }
            tot[rep] = clock_mono() - t0;
            cp[rep] = thread_cpu() - c0;
            f[rep] = TeModel_times(model).predict_features_s;
            tr[rep] = TeModel_times(model).predict_trees_s;
        }
        double mt = median(tot, 5), mc = median(cp, 5);
        const char *name = strrchr(tasks[t].path, '/') ? strrchr(tasks[t].path, '/') + 1 : tasks[t].path;
        printf("%-14s %6d %11.1f %9.1f %9.1f %8.1f %12.1f %12.1f %8.2f%%\n", name, population, 1e3 * median(f, 5),
               1e3 * median(tr, 5), 1e3 * mt, 1e3 * mc, 1e3 * mc * 1000 / population, round_s, 100 * mc / round_s);
    }
    getloadavg(la, 3);
    printf("\nfeatures / trees / wall ms: wall time (median of 5); cpu ms: the thread's CPU time; round s: 64 x the "
           "mean gap between consecutive records of the log (%d gaps, pauses over 60 s left out); share: cpu ms of "
           "one prediction of the population over one round\nload average at end %.2f %.2f %.2f\n",
           n_used, la[0], la[1], la[2]);
    TeModel_delete(model);
    free(pop);
    free(out);
    free(gaps);
    for (int t = 0; t < n_expr; t++) {
        free(tasks[t].rec);
        TeProgram_delete(tasks[t].g);
    }
    return 0;
}
