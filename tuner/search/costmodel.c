/* tuner/search/costmodel.c: gradient-boosted trees through XGBoost's C API. */
#include "tuner/search/costmodel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"

#ifdef TT_HAVE_XGBOOST
#include <xgboost/c_api.h>
#endif

/* 80 rounds at eta 0.3: on the unit test's objective the held-out rank
 * correlation (rank loss) goes 0.80/0.85/0.89/0.91/0.91 for 10/20/40/80/150
 * rounds on 64 points and 0.90/0.94/0.97/0.98/0.99 on 1000 points; the reg
 * loss plateaus at 40 and loses little at 80. A fit on 1000 rows takes about
 * 40 ms on one thread. */
#define DEFAULT_ROUNDS 80

void CostModelParams_defaults(CostModelParams *this) {
    this->loss = COST_LOSS_RANK;
    this->rounds = DEFAULT_ROUNDS;
    this->max_depth = 3;
    this->eta = 0.3;
    this->gamma = 1e-4;
    this->min_child_weight = 1;
    this->lambda = 1;
    this->nthread = 1;
    this->seed = 0;
    this->hist = false;
}

Status CostLoss_parse(const char *name, CostLoss *out, char *err) {
    if (strcmp(name, "rank") == 0) {
        *out = COST_LOSS_RANK;
        return TT_OK;
    }
    if (strcmp(name, "reg") == 0) {
        *out = COST_LOSS_REG;
        return TT_OK;
    }
    return tt_fail(err, "unknown cost model loss '%s' (known: rank, reg)", name);
}

const char *CostLoss_name(CostLoss loss) { return loss == COST_LOSS_REG ? "reg" : "rank"; }

/* ---- rank correlation (no XGBoost needed) ---------------------------------- */

typedef struct Ranked {
    double v;
    int i;
} Ranked;

static int cmp_ranked(const void *a, const void *b) {
    double x = ((const Ranked *)a)->v, y = ((const Ranked *)b)->v;
    return x < y ? -1 : x > y ? 1 : 0;
}

/* Ranks 1..n with ties sharing their mean rank. */
static void ranks_of(const double *v, int n, double *rank, Ranked *tmp) {
    for (int i = 0; i < n; i++)
        tmp[i] = (Ranked){v[i], i};
    qsort(tmp, (size_t)n, sizeof *tmp, cmp_ranked);
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && tmp[j + 1].v == tmp[i].v)
            j++;
        double r = (i + j) / 2.0 + 1;
        for (int k = i; k <= j; k++)
            rank[tmp[k].i] = r;
        i = j + 1;
    }
}

double rank_correlation(const double *a, const double *b, int n) {
    if (n < 2) return 0;
    double *ra = malloc(sizeof(double) * (size_t)n), *rb = malloc(sizeof(double) * (size_t)n);
    Ranked *tmp = malloc(sizeof(Ranked) * (size_t)n);
    if (!ra || !rb || !tmp) abort();
    ranks_of(a, n, ra, tmp);
    ranks_of(b, n, rb, tmp);
    /* Pearson on the ranks: exact with ties, unlike the 1 - 6 sum d^2 shortcut. */
    double ma = 0, mb = 0;
    for (int i = 0; i < n; i++) {
        ma += ra[i];
        mb += rb[i];
    }
    ma /= n;
    mb /= n;
    double sab = 0, saa = 0, sbb = 0;
    for (int i = 0; i < n; i++) {
        sab += (ra[i] - ma) * (rb[i] - mb);
        saa += (ra[i] - ma) * (ra[i] - ma);
        sbb += (rb[i] - mb) * (rb[i] - mb);
    }
    free(ra);
    free(rb);
    free(tmp);
    if (saa <= 0 || sbb <= 0) return 0;
    return sab / sqrt(saa * sbb);
}

#ifdef TT_HAVE_XGBOOST

struct CostModel {
    BoosterHandle booster;
    int n_features;
    int trained_on;
    double train_s;
};

bool CostModel_available(char *err) { return true; }

/* XGBoost's global config (verbosity) is per thread: set it once in each
 * thread that calls in, so the library never prints to our terminal. */
static void quiet_thread(void) {
    static _Thread_local bool done;
    if (!done) {
        XGBSetGlobalConfig("{\"verbosity\": 0}");
        done = true;
    }
}

static Status xgb_fail(char *err, const char *what) {
    return tt_fail(err, "XGBoost %s failed: %s", what, XGBGetLastError());
}

/* A booster on x (n rows) with p's parameters and the given objective. */
static BoosterHandle booster_new(const CostModelParams *p, const float *x, int n, int n_features, const char *objective,
                                 DMatrixHandle *dtrain, char *err) {
    *dtrain = NULL;
    BoosterHandle booster = NULL;
    if (n < 2 || n_features < 1) {
        tt_fail(err, "cost model needs at least 2 points with features (got %d points, %d features)", n, n_features);
        return NULL;
    }
    quiet_thread();
    if (XGDMatrixCreateFromMat_omp(x, (bst_ulong)n, (bst_ulong)n_features, NAN, dtrain, 1) != 0) {
        xgb_fail(err, "DMatrix creation");
        return NULL;
    }
    if (XGBoosterCreate(dtrain, 1, &booster) != 0) {
        xgb_fail(err, "booster creation");
        goto fail;
    }
    char buf[64];
    struct {
        const char *name;
        double value;
        bool integer;
    } num[] = {
        {"max_depth", p->max_depth, true},
        {"eta", p->eta, false},
        {"gamma", p->gamma, false},
        {"min_child_weight", p->min_child_weight, false},
        {"lambda", p->lambda, false},
        {"nthread", p->nthread, true},
        {"seed", (double)(p->seed & 0x7fffffff), true},
    };
    if (XGBoosterSetParam(booster, "verbosity", "0") != 0 || XGBoosterSetParam(booster, "objective", objective) != 0 ||
        XGBoosterSetParam(booster, "tree_method", p->hist ? "hist" : "exact") != 0) {
        xgb_fail(err, "setting parameters");
        goto fail;
    }
    for (size_t i = 0; i < sizeof num / sizeof num[0]; i++) {
        if (num[i].integer)
            snprintf(buf, sizeof buf, "%lld", (long long)num[i].value);
        else
            snprintf(buf, sizeof buf, "%.17g", num[i].value);
        if (XGBoosterSetParam(booster, num[i].name, buf) != 0) {
            xgb_fail(err, "setting parameters");
            goto fail;
        }
    }
    return booster;
fail:
    if (booster) XGBoosterFree(booster);
    XGDMatrixFree(*dtrain);
    *dtrain = NULL;
    return NULL;
}

static CostModel *model_new(BoosterHandle booster, int n_features, int n, double t0) {
    CostModel *this = calloc(1, sizeof *this);
    if (!this) abort();
    this->booster = booster;
    this->n_features = n_features;
    this->trained_on = n;
    this->train_s = clock_mono() - t0;
    return this;
}

CostModel *CostModel_train(const CostModelParams *p, const float *x, const float *y, int n, int n_features,
                           const unsigned *groups, int n_groups, char *err) {
    double t0 = clock_mono();
    DMatrixHandle dtrain;
    BoosterHandle booster =
        booster_new(p, x, n, n_features, p->loss == COST_LOSS_REG ? "reg:squarederror" : "rank:pairwise", &dtrain, err);
    if (!booster) return NULL;
    if (XGDMatrixSetFloatInfo(dtrain, "label", y, (bst_ulong)n) != 0) {
        xgb_fail(err, "setting labels");
        goto fail;
    }
    if (groups && n_groups > 0 && XGDMatrixSetUIntInfo(dtrain, "group", groups, (bst_ulong)n_groups) != 0) {
        xgb_fail(err, "setting groups");
        goto fail;
    }
    for (int it = 0; it < p->rounds; it++) {
        if (XGBoosterUpdateOneIter(booster, it, dtrain) != 0) {
            xgb_fail(err, "training");
            goto fail;
        }
    }
    XGDMatrixFree(dtrain);
    return model_new(booster, n_features, n, t0);
fail:
    XGBoosterFree(booster);
    XGDMatrixFree(dtrain);
    return NULL;
}

CostModel *CostModel_trainObjective(const CostModelParams *p, const float *x, int n, int n_features,
                                    CostObjective objective, void *ctx, char *err) {
    double t0 = clock_mono();
    DMatrixHandle dtrain;
    /* the gradients come from objective; this one only fixes the output transform (none) */
    BoosterHandle booster = booster_new(p, x, n, n_features, "reg:squarederror", &dtrain, err);
    if (!booster) return NULL;
    float *grad = malloc(sizeof(float) * (size_t)n), *hess = malloc(sizeof(float) * (size_t)n);
    if (!grad || !hess) abort();
    CostModel *this = NULL;
    if (XGBoosterSetParam(booster, "base_score", "0") != 0) {
        xgb_fail(err, "setting parameters");
        goto done;
    }
    for (int it = 0; it < p->rounds; it++) {
        bst_ulong len = 0;
        const float *pred = NULL;
        /* option 1: raw margins; training 1: the predictions a training step sees */
        if (XGBoosterPredict(booster, dtrain, 1, 0, 1, &len, &pred) != 0 || len != (bst_ulong)n) {
            xgb_fail(err, "prediction while training");
            goto done;
        }
        objective(ctx, pred, n, grad, hess);
        if (XGBoosterBoostOneIter(booster, dtrain, grad, hess, (bst_ulong)n) != 0) {
            xgb_fail(err, "training");
            goto done;
        }
    }
    this = model_new(booster, n_features, n, t0);
    booster = NULL;
done:
    if (booster) XGBoosterFree(booster);
    XGDMatrixFree(dtrain);
    free(grad);
    free(hess);
    return this;
}

Status CostModel_predict(CostModel *this, const float *x, int n, float *out, char *err) {
    if (n <= 0) return TT_OK;
    quiet_thread();
    DMatrixHandle dm = NULL;
    if (XGDMatrixCreateFromMat_omp(x, (bst_ulong)n, (bst_ulong)this->n_features, NAN, &dm, 1) != 0)
        return xgb_fail(err, "DMatrix creation");
    bst_ulong len = 0;
    const float *res = NULL;
    if (XGBoosterPredict(this->booster, dm, 0, 0, 0, &len, &res) != 0) {
        XGDMatrixFree(dm);
        return xgb_fail(err, "prediction");
    }
    if (len != (bst_ulong)n) {
        XGDMatrixFree(dm);
        return tt_fail(err, "XGBoost returned %llu predictions for %d rows", (unsigned long long)len, n);
    }
    memcpy(out, res, sizeof(float) * (size_t)n);
    XGDMatrixFree(dm);
    return TT_OK;
}

void CostModel_delete(CostModel *this) {
    if (!this) return;
    XGBoosterFree(this->booster);
    free(this);
}

#else /* no XGBoost in this build */

struct CostModel {
    int n_features;
    int trained_on;
    double train_s;
};

static const char NO_XGB[] =
    "the xgb tuner needs XGBoost, and tunetop was built without it (install libxgboost-dev and rebuild, "
    "or use --tuner ga or random)";

bool CostModel_available(char *err) {
    tt_fail(err, "%s", NO_XGB);
    return false;
}

CostModel *CostModel_train(const CostModelParams *p, const float *x, const float *y, int n, int n_features,
                           const unsigned *groups, int n_groups, char *err) {
    tt_fail(err, "%s", NO_XGB);
    return NULL;
}

CostModel *CostModel_trainObjective(const CostModelParams *p, const float *x, int n, int n_features,
                                    CostObjective objective, void *ctx, char *err) {
    tt_fail(err, "%s", NO_XGB);
    return NULL;
}

Status CostModel_predict(CostModel *this, const float *x, int n, float *out, char *err) {
    return tt_fail(err, "%s", NO_XGB);
}

void CostModel_delete(CostModel *this) { free(this); }

#endif

int CostModel_featureCount(const CostModel *this) { return this->n_features; }
int CostModel_trainedOn(const CostModel *this) { return this->trained_on; }
double CostModel_trainSeconds(const CostModel *this) { return this->train_s; }
