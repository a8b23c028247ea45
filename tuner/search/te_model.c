/* tuner/search/te_model.c: the pack-sum cost model over program features (see te_model.h). */
#include "tuner/search/te_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "kernels/templates/te/te_features.h"
#include "records/log.h"

/* Chosen on bench/te_model_bench (matmul, softmax, layer-norm, 1500 measured
 * random schedules, 3 seeds; README "Benchmarks"): the mixed label, tasks
 * balanced and task-level features make the other tasks' records help
 * (softmax own+others 0.67 against -0.27 with the share-of-best label alone);
 * depth 4, eta 0.1, 200 rounds rank as well as depth 6 or 8 (within 0.03)
 * and fit in a third of the time; hist trees fit 8x faster than exact with
 * the same ranking. */
#define TE_MODEL_DEPTH 4
#define TE_MODEL_ETA 0.1
#define TE_MODEL_ROUNDS 200
#define TE_MODEL_MAX_PROGRAMS 4096
#define FAILED_WEIGHT 0.1
/* the task-level values appended to each row of TE_FEATURES */
#define TE_EXTRA 3
#define TE_ROW (TE_FEATURES + TE_EXTRA)

typedef struct Prog {
    int row0, rows;
    int task;
    double gflops;
} Prog;

typedef struct TaskInfo {
    char key[TE_KEY_LEN];
    float extra[TE_EXTRA - 1]; /* log2(1 + FLOPs), stages */
    double *sorted;            /* measured GFLOPS of the programs that ran at the last fit, ascending */
    int n_sorted;
    TeModelQuality q;
    double *rp, *rm; /* this round's (predicted, measured GFLOPS) pairs */
    int rn, rcap;
} TaskInfo;

struct TeModel {
    TeModelOptions opt;
    float *x; /* rows * TE_ROW */
    int n_rows, cap_rows;
    Prog *prog;
    int n_prog, cap_prog;
    TaskInfo *task;
    int n_tasks, cap_tasks;
    CostModel *model;
    int trained_on;
    TeFeatures f;
    float *px, *pout; /* predict scratch */
    int *prow;        /* per predicted row: its program */
    int pcap;
    TeModelTimes times;
};

void TeModel_defaults(TeModelOptions *opt) {
    memset(opt, 0, sizeof *opt);
    CostModelParams_defaults(&opt->xgb);
    opt->xgb.loss = COST_LOSS_REG;
    opt->xgb.max_depth = TE_MODEL_DEPTH;
    opt->xgb.rounds = TE_MODEL_ROUNDS;
    opt->xgb.eta = TE_MODEL_ETA;
    opt->xgb.hist = true;
    opt->label = TE_LABEL_MIX;
    opt->balance = true;
    opt->task_features = true;
    opt->max_programs = TE_MODEL_MAX_PROGRAMS;
}

TeModel *TeModel_new(const TeModelOptions *opt, char *err) {
    if (!CostModel_available(err)) return NULL;
    TeModel *this = calloc(1, sizeof *this);
    if (!this) abort();
    if (opt)
        this->opt = *opt;
    else
        TeModel_defaults(&this->opt);
    TeFeatures_init(&this->f);
    return this;
}

void TeModel_delete(TeModel *this) {
    if (!this) return;
    CostModel_delete(this->model);
    TeFeatures_done(&this->f);
    for (int i = 0; i < this->n_tasks; i++) {
        free(this->task[i].sorted);
        free(this->task[i].rp);
        free(this->task[i].rm);
    }
    free(this->task);
    free(this->x);
    free(this->prog);
    free(this->px);
    free(this->pout);
    free(this->prow);
    free(this);
}

static int task_of(TeModel *this, const TeDag *dag) {
    for (int i = 0; i < this->n_tasks; i++)
        if (strcmp(this->task[i].key, dag->key) == 0) return i;
    if (this->n_tasks == this->cap_tasks) {
        this->cap_tasks = this->cap_tasks ? 2 * this->cap_tasks : 8;
        this->task = realloc(this->task, sizeof *this->task * (size_t)this->cap_tasks);
        if (!this->task) abort();
    }
    TaskInfo *t = &this->task[this->n_tasks];
    memset(t, 0, sizeof *t);
    snprintf(t->key, sizeof t->key, "%s", dag->key);
    t->extra[0] = (float)log2(1 + (dag->flops > 0 ? dag->flops : 0));
    t->extra[1] = (float)dag->n_stages;
    return this->n_tasks++;
}

/* The task-level values after a program's TE_FEATURES (0 when switched off). */
static void set_extra(const TeModel *this, float *rows, int n, int task) {
    for (int r = 0; r < n; r++) {
        float *e = rows + (size_t)r * TE_ROW + TE_FEATURES;
        bool on = this->opt.task_features;
        e[0] = on ? (float)log2(1 + n) : 0;
        e[1] = on ? this->task[task].extra[0] : 0;
        e[2] = on ? this->task[task].extra[1] : 0;
    }
}

/* Copies the extracted rows (TE_FEATURES each) into dst (TE_ROW each). */
static void copy_rows(const TeModel *this, float *dst, int task) {
    for (int r = 0; r < this->f.n; r++)
        memcpy(dst + (size_t)r * TE_ROW, this->f.x + (size_t)r * TE_FEATURES, sizeof(float) * TE_FEATURES);
    set_extra(this, dst, this->f.n, task);
}

static void pscratch(TeModel *this, int rows) {
    if (rows <= this->pcap) return;
    while (rows > this->pcap)
        this->pcap = this->pcap ? 2 * this->pcap : 4096;
    this->px = realloc(this->px, sizeof(float) * TE_ROW * (size_t)this->pcap);
    this->pout = realloc(this->pout, sizeof(float) * (size_t)this->pcap);
    this->prow = realloc(this->prow, sizeof(int) * (size_t)this->pcap);
    if (!this->px || !this->pout || !this->prow) abort();
}

/* One program; 0 when its schedule does not lower (skipped). */
static int add_one(TeModel *this, const TeDag *dag, int task, const Steps *steps, double gflops) {
    char err[TT_ERRLEN];
    if (TeFeatures_extract(&this->f, dag, steps, err) != TT_OK || this->f.n == 0) return 0;
    if (this->n_rows + this->f.n > this->cap_rows) {
        while (this->n_rows + this->f.n > this->cap_rows)
            this->cap_rows = this->cap_rows ? 2 * this->cap_rows : 1024;
        this->x = realloc(this->x, sizeof(float) * TE_ROW * (size_t)this->cap_rows);
        if (!this->x) abort();
    }
    if (this->n_prog == this->cap_prog) {
        this->cap_prog = this->cap_prog ? 2 * this->cap_prog : 256;
        this->prog = realloc(this->prog, sizeof(Prog) * (size_t)this->cap_prog);
        if (!this->prog) abort();
    }
    copy_rows(this, this->x + (size_t)this->n_rows * TE_ROW, task);
    this->prog[this->n_prog++] = (Prog){this->n_rows, this->f.n, task, gflops > 0 && isfinite(gflops) ? gflops : 0};
    this->n_rows += this->f.n;
    return 1;
}

/* A label (what the model predicts) of task t back to GFLOPS, through the
 * throughputs measured at the last fit. */
static double to_gflops(const TeModel *this, const TaskInfo *t, double label) {
    if (t->n_sorted == 0) return 0;
    double best = t->sorted[t->n_sorted - 1];
    if (this->opt.label != TE_LABEL_RANK) return label > 0 ? label * best : 0; /* mix: its share of the best */
    /* the percentile (i + 1) / n of the i-th slowest */
    double at = label * t->n_sorted - 1;
    if (at <= 0) return t->sorted[0];
    if (at >= t->n_sorted - 1) return best;
    int i = (int)at;
    return t->sorted[i] + (at - i) * (t->sorted[i + 1] - t->sorted[i]);
}

/* Scores programs from..n_prog-1 (just added) with the model of the last fit
 * before it learns them: what TeModel_quality reports. */
static void score_new(TeModel *this, int from) {
    if (!this->model || from >= this->n_prog) return;
    int row0 = this->prog[from].row0, rows = this->n_rows - row0;
    pscratch(this, rows);
    char err[TT_ERRLEN];
    if (CostModel_predict(this->model, this->x + (size_t)row0 * TE_ROW, rows, this->pout, err) != TT_OK) return;
    for (int p = from; p < this->n_prog; p++) {
        const Prog *g = &this->prog[p];
        if (g->gflops <= 0) continue;
        double s = 0;
        for (int r = 0; r < g->rows; r++)
            s += this->pout[g->row0 - row0 + r];
        TaskInfo *t = &this->task[g->task];
        t->q.predicted++;
        if (g->gflops > t->q.best_gflops) {
            t->q.best_gflops = g->gflops;
            t->q.best_predicted = to_gflops(this, t, s);
        }
        if (t->rn == t->rcap) {
            t->rcap = t->rcap ? 2 * t->rcap : 64;
            t->rp = realloc(t->rp, sizeof(double) * (size_t)t->rcap);
            t->rm = realloc(t->rm, sizeof(double) * (size_t)t->rcap);
            if (!t->rp || !t->rm) abort();
        }
        t->rp[t->rn] = s;
        t->rm[t->rn++] = g->gflops;
    }
}

Status TeModel_add(TeModel *this, const TeDag *dag, const Steps *steps, const double *gflops, int n, int *added,
                   char *err) {
    (void)err;
    int task = task_of(this, dag), k = 0, from = this->n_prog;
    for (int i = 0; i < n; i++)
        k += add_one(this, dag, task, &steps[i], gflops[i]);
    score_new(this, from);
    if (added) *added = k;
    return TT_OK;
}

/* The te=... key inside a record's workload key ("expr:name=mm,te=te-...,flops=..."). */
static int record_dag(const Record *rec, const TeDag *const *dags, int n_dags) {
    const char *p = strstr(rec->task_key, "te=te-");
    if (!p) return -1;
    p += 3;
    size_t len = strcspn(p, ",");
    for (int i = 0; i < n_dags; i++)
        if (strlen(dags[i]->key) == len && strncmp(dags[i]->key, p, len) == 0) return i;
    return -1;
}

Status TeModel_addLog(TeModel *this, const char *path, const TeDag *const *dags, int n_dags, int *added, char *err) {
    LogReader *r;
    LogHeader h;
    if (added) *added = 0;
    if (LogReader_open(path, &r, &h, err) != TT_OK) return TT_ERR;
    Record rec;
    Record_init(&rec);
    char msg[TT_ERRLEN];
    LogReadStatus st;
    while ((st = LogReader_next(r, &rec, msg)) == LOG_RECORD) {
        if (!rec.steps || Record_isImported(&rec)) continue;
        int d = record_dag(&rec, dags, n_dags);
        if (d < 0) continue;
        Steps s;
        if (Steps_decode(rec.steps, &s, msg) != TT_OK) continue;
        double flops = dags[d]->flops >= 1 ? dags[d]->flops : 1; /* as the expr workload counts them */
        int k = add_one(this, dags[d], task_of(this, dags[d]), &s, Record_gflops(&rec, flops));
        if (added) *added += k;
    }
    Record_done(&rec);
    LogReader_close(r);
    if (st == LOG_DAMAGED) return tt_fail(err, "%s: %s", path, msg);
    return TT_OK;
}

/* ---- pack-sum training ------------------------------------------------------- */

typedef struct PackSum {
    const Prog *prog; /* the fit's programs; row0 counted from row_base */
    int n_prog, row_base;
    const double *y, *w; /* per program: label, weight */
} PackSum;

static void pack_sum(void *ctx, const float *pred, int n, float *grad, float *hess) {
    const PackSum *P = ctx;
    (void)n;
    for (int p = 0; p < P->n_prog; p++) {
        const Prog *g = &P->prog[p];
        int r0 = g->row0 - P->row_base;
        double score = 0;
        for (int r = 0; r < g->rows; r++)
            score += pred[r0 + r];
        float gr = (float)(P->w[p] * (score - P->y[p])), he = (float)P->w[p];
        for (int r = 0; r < g->rows; r++) {
            grad[r0 + r] = gr;
            hess[r0 + r] = he;
        }
    }
}

typedef struct Ran {
    double gflops;
    int p;
} Ran;

static int cmp_ran(const void *a, const void *b) {
    double x = ((const Ran *)a)->gflops, y = ((const Ran *)b)->gflops;
    return (x > y) - (x < y);
}

/* Each program's label (TeModelOptions.label) from every program added, and
 * each task's measured throughputs in order (to_gflops). */
static void labels(TeModel *this, double *y) {
    Ran *order = malloc(sizeof(Ran) * (size_t)(this->n_prog ? this->n_prog : 1));
    if (!order) abort();
    for (int t = 0; t < this->n_tasks; t++) {
        TaskInfo *ti = &this->task[t];
        int n = 0;
        for (int p = 0; p < this->n_prog; p++)
            if (this->prog[p].task == t && this->prog[p].gflops > 0) order[n++] = (Ran){this->prog[p].gflops, p};
        qsort(order, (size_t)n, sizeof *order, cmp_ran);
        ti->sorted = realloc(ti->sorted, sizeof(double) * (size_t)(n ? n : 1));
        if (!ti->sorted) abort();
        ti->n_sorted = n;
        for (int i = 0; i < n; i++)
            ti->sorted[i] = order[i].gflops;
        for (int p = 0; p < this->n_prog; p++)
            if (this->prog[p].task == t) y[p] = 0; /* failed */
        for (int i = 0; i < n;) {                  /* ties share their mean percentile */
            int j = i;
            while (j + 1 < n && ti->sorted[j + 1] == ti->sorted[i])
                j++;
            double share = ti->sorted[i] / ti->sorted[n - 1], rank = ((i + j) / 2.0 + 1) / n;
            for (int k = i; k <= j; k++)
                y[order[k].p] = this->opt.label == TE_LABEL_BEST   ? share
                                : this->opt.label == TE_LABEL_RANK ? rank
                                                                   : (share + rank) / 2;
            i = j + 1;
        }
    }
    free(order);
}

/* The last round's quality of every task: its programs scored by the model
 * that is about to be replaced. */
static void close_round(TeModel *this) {
    for (int t = 0; t < this->n_tasks; t++) {
        TaskInfo *ti = &this->task[t];
        if (ti->rn >= 2) {
            ti->q.round_n = ti->rn;
            ti->q.round_rho = rank_correlation(ti->rp, ti->rm, ti->rn);
        }
        ti->rn = 0;
    }
}

Status TeModel_fit(TeModel *this, char *err) {
    if (this->n_prog < 2) return tt_fail(err, "the te cost model needs at least 2 programs (has %d)", this->n_prog);
    double t0 = clock_mono();
    /* the most recent max_programs programs: contiguous rows */
    int from = this->opt.max_programs > 0 && this->n_prog > this->opt.max_programs
                   ? this->n_prog - this->opt.max_programs
                   : 0,
        n = this->n_prog - from;
    double *y = malloc(sizeof(double) * (size_t)this->n_prog), *w = malloc(sizeof(double) * (size_t)n);
    int *count = calloc((size_t)this->n_tasks, sizeof(int));
    if (!y || !w || !count) abort();
    close_round(this);
    labels(this, y);
    int present = 0;
    for (int p = from; p < this->n_prog; p++)
        if (count[this->prog[p].task]++ == 0) present++;
    for (int p = from; p < this->n_prog; p++) {
        double share = this->opt.balance ? (double)n / present / count[this->prog[p].task] : 1;
        w[p - from] = (y[p] + FAILED_WEIGHT) * share;
    }
    int row0 = this->prog[from].row0;
    PackSum P = {this->prog + from, n, row0, y + from, w};
    CostModel *m = CostModel_trainObjective(&this->opt.xgb, this->x + (size_t)row0 * TE_ROW, this->n_rows - row0,
                                            TE_ROW, pack_sum, &P, err);
    free(y);
    free(w);
    free(count);
    if (!m) return TT_ERR;
    CostModel_delete(this->model);
    this->model = m;
    this->trained_on = n;
    this->times.fit_s = clock_mono() - t0;
    this->times.since_fit_programs = 0;
    this->times.since_fit_s = 0;
    return TT_OK;
}

bool TeModel_quality(const TeModel *this, const char *task_key, TeModelQuality *out) {
    memset(out, 0, sizeof *out);
    for (int t = 0; t < this->n_tasks; t++)
        if (strcmp(this->task[t].key, task_key) == 0) {
            *out = this->task[t].q;
            return out->predicted > 0;
        }
    return false;
}

bool TeModel_trained(const TeModel *this) { return this->model != NULL; }
int TeModel_programs(const TeModel *this) { return this->n_prog; }
int TeModel_trainedOn(const TeModel *this) { return this->trained_on; }
TeModelTimes TeModel_times(const TeModel *this) { return this->times; }

Status TeModel_predict(TeModel *this, const TeDag *dag, const Steps *steps, int n, float *out, char *err) {
    double t0 = clock_mono();
    if (!this->model) {
        for (int i = 0; i < n; i++)
            out[i] = 0;
        this->times.predict_features_s = this->times.predict_trees_s = 0;
        return TT_OK;
    }
    int rows = 0, task = task_of(this, dag);
    char msg[TT_ERRLEN];
    for (int i = 0; i < n; i++) {
        out[i] = 0;
        if (TeFeatures_extract(&this->f, dag, &steps[i], msg) != TT_OK || this->f.n == 0) {
            out[i] = -INFINITY;
            continue;
        }
        pscratch(this, rows + this->f.n);
        copy_rows(this, this->px + (size_t)rows * TE_ROW, task);
        for (int r = 0; r < this->f.n; r++)
            this->prow[rows + r] = i;
        rows += this->f.n;
    }
    double t1 = clock_mono();
    this->times.predict_features_s = t1 - t0;
    if (rows > 0 && CostModel_predict(this->model, this->px, rows, this->pout, err) != TT_OK) return TT_ERR;
    for (int r = 0; r < rows; r++)
        out[this->prow[r]] += this->pout[r];
    this->times.predict_trees_s = clock_mono() - t1;
    this->times.since_fit_programs += n;
    this->times.since_fit_s += clock_mono() - t0;
    return TT_OK;
}
