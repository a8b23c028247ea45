/* tuner/te_model.c: the pack-sum cost model over program features (see te_model.h). */
#include "tuner/te_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "kernels/templates/te/te_features.h"
#include "records/log.h"

/* Deeper trees than the template model's 3: a program's rows differ in kind
 * (init, update, elementwise stages), and one tree has to tell them apart
 * before it can rank them; bench/te_model_bench measures the choice. */
#define TE_MODEL_DEPTH 6
#define TE_MODEL_ROUNDS 120
#define FAILED_WEIGHT 0.1

typedef struct Prog {
    int row0, rows;
    int task;
    double gflops;
} Prog;

struct TeModel {
    CostModelParams params;
    float *x; /* rows * TE_FEATURES */
    int n_rows, cap_rows;
    Prog *prog;
    int n_prog, cap_prog;
    char (*key)[TE_KEY_LEN];
    int n_tasks, cap_tasks;
    CostModel *model;
    int trained_on;
    TeFeatures f;
    float *px, *pout; /* predict scratch */
    int *prow;        /* per predicted row: its program */
    int pcap;
    TeModelTimes times;
};

void TeModel_defaults(CostModelParams *params) {
    CostModelParams_defaults(params);
    params->loss = COST_LOSS_REG;
    params->max_depth = TE_MODEL_DEPTH;
    params->rounds = TE_MODEL_ROUNDS;
}

TeModel *TeModel_new(const CostModelParams *params, char *err) {
    if (!CostModel_available(err)) return NULL;
    TeModel *this = calloc(1, sizeof *this);
    if (!this) abort();
    if (params)
        this->params = *params;
    else
        TeModel_defaults(&this->params);
    TeFeatures_init(&this->f);
    return this;
}

void TeModel_delete(TeModel *this) {
    if (!this) return;
    CostModel_delete(this->model);
    TeFeatures_done(&this->f);
    free(this->x);
    free(this->prog);
    free(this->key);
    free(this->px);
    free(this->pout);
    free(this->prow);
    free(this);
}

static int task_of(TeModel *this, const char *key) {
    for (int i = 0; i < this->n_tasks; i++)
        if (strcmp(this->key[i], key) == 0) return i;
    if (this->n_tasks == this->cap_tasks) {
        this->cap_tasks = this->cap_tasks ? 2 * this->cap_tasks : 8;
        this->key = realloc(this->key, sizeof *this->key * (size_t)this->cap_tasks);
        if (!this->key) abort();
    }
    snprintf(this->key[this->n_tasks], TE_KEY_LEN, "%s", key);
    return this->n_tasks++;
}

/* One program; 0 when its schedule does not lower (skipped). */
static int add_one(TeModel *this, const TeDag *dag, int task, const Steps *steps, double gflops) {
    char err[TT_ERRLEN];
    if (TeFeatures_extract(&this->f, dag, steps, err) != TT_OK || this->f.n == 0) return 0;
    if (this->n_rows + this->f.n > this->cap_rows) {
        while (this->n_rows + this->f.n > this->cap_rows)
            this->cap_rows = this->cap_rows ? 2 * this->cap_rows : 1024;
        this->x = realloc(this->x, sizeof(float) * TE_FEATURES * (size_t)this->cap_rows);
        if (!this->x) abort();
    }
    if (this->n_prog == this->cap_prog) {
        this->cap_prog = this->cap_prog ? 2 * this->cap_prog : 256;
        this->prog = realloc(this->prog, sizeof(Prog) * (size_t)this->cap_prog);
        if (!this->prog) abort();
    }
    memcpy(this->x + (size_t)this->n_rows * TE_FEATURES, this->f.x, sizeof(float) * TE_FEATURES * (size_t)this->f.n);
    this->prog[this->n_prog++] = (Prog){this->n_rows, this->f.n, task, gflops > 0 && isfinite(gflops) ? gflops : 0};
    this->n_rows += this->f.n;
    return 1;
}

Status TeModel_add(TeModel *this, const TeDag *dag, const Steps *steps, const double *gflops, int n, int *added,
                   char *err) {
    (void)err;
    int task = task_of(this, dag->key), k = 0;
    for (int i = 0; i < n; i++)
        k += add_one(this, dag, task, &steps[i], gflops[i]);
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
        int k = add_one(this, dags[d], task_of(this, dags[d]->key), &s, Record_gflops(&rec, flops));
        if (added) *added += k;
    }
    Record_done(&rec);
    LogReader_close(r);
    if (st == LOG_DAMAGED) return tt_fail(err, "%s: %s", path, msg);
    return TT_OK;
}

/* ---- pack-sum training ------------------------------------------------------- */

typedef struct PackSum {
    const Prog *prog;
    int n_prog;
    const double *y, *w; /* per program: label, weight */
} PackSum;

static void pack_sum(void *ctx, const float *pred, int n, float *grad, float *hess) {
    const PackSum *P = ctx;
    (void)n;
    for (int p = 0; p < P->n_prog; p++) {
        const Prog *g = &P->prog[p];
        double score = 0;
        for (int r = 0; r < g->rows; r++)
            score += pred[g->row0 + r];
        float gr = (float)(P->w[p] * (score - P->y[p])), he = (float)P->w[p];
        for (int r = 0; r < g->rows; r++) {
            grad[g->row0 + r] = gr;
            hess[g->row0 + r] = he;
        }
    }
}

Status TeModel_fit(TeModel *this, char *err) {
    if (this->n_prog < 2) return tt_fail(err, "the te cost model needs at least 2 programs (has %d)", this->n_prog);
    double t0 = clock_mono();
    double *best = calloc((size_t)this->n_tasks, sizeof(double));
    double *y = malloc(sizeof(double) * (size_t)this->n_prog), *w = malloc(sizeof(double) * (size_t)this->n_prog);
    if (!best || !y || !w) abort();
    for (int p = 0; p < this->n_prog; p++)
        if (this->prog[p].gflops > best[this->prog[p].task]) best[this->prog[p].task] = this->prog[p].gflops;
    for (int p = 0; p < this->n_prog; p++) {
        double b = best[this->prog[p].task];
        y[p] = b > 0 ? this->prog[p].gflops / b : 0;
        w[p] = y[p] + FAILED_WEIGHT;
    }
    PackSum P = {this->prog, this->n_prog, y, w};
    CostModel *m = CostModel_trainObjective(&this->params, this->x, this->n_rows, TE_FEATURES, pack_sum, &P, err);
    free(best);
    free(y);
    free(w);
    if (!m) return TT_ERR;
    CostModel_delete(this->model);
    this->model = m;
    this->trained_on = this->n_prog;
    this->times.fit_s = clock_mono() - t0;
    return TT_OK;
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
    int rows = 0;
    char msg[TT_ERRLEN];
    for (int i = 0; i < n; i++) {
        out[i] = 0;
        if (TeFeatures_extract(&this->f, dag, &steps[i], msg) != TT_OK || this->f.n == 0) {
            out[i] = -INFINITY;
            continue;
        }
        if (rows + this->f.n > this->pcap) {
            while (rows + this->f.n > this->pcap)
                this->pcap = this->pcap ? 2 * this->pcap : 4096;
            this->px = realloc(this->px, sizeof(float) * TE_FEATURES * (size_t)this->pcap);
            this->pout = realloc(this->pout, sizeof(float) * (size_t)this->pcap);
            this->prow = realloc(this->prow, sizeof(int) * (size_t)this->pcap);
            if (!this->px || !this->pout || !this->prow) abort();
        }
        memcpy(this->px + (size_t)rows * TE_FEATURES, this->f.x, sizeof(float) * TE_FEATURES * (size_t)this->f.n);
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
    return TT_OK;
}
