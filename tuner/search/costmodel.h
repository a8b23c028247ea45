/* tuner/search/costmodel.h: the cost model of the xgb strategy, gradient-boosted
 * trees through XGBoost's C API.
 *
 * A CostModel is trained once, on a snapshot of feature rows and labels, and
 * then only predicts: refitting builds a NEW model (usually on a background
 * thread) that replaces the old one. One CostModel must be used by one thread
 * at a time; different models may train and predict on different threads at
 * once.
 *
 * When tunetop is built without XGBoost (TT_HAVE_XGBOOST undefined) every
 * constructor fails with a message saying so; the rest still builds.
 *
 * Ownership: CostModel_train returns a model the caller frees with
 * CostModel_delete. Input arrays are copied (the caller keeps them).
 */
#ifndef TT_TUNER_COSTMODEL_H
#define TT_TUNER_COSTMODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"

typedef enum {
    COST_LOSS_RANK = 0, /* rank:pairwise: only the order of predictions means something */
    COST_LOSS_REG       /* reg:squarederror: predictions estimate the normalised label */
} CostLoss;

typedef struct CostModelParams {
    CostLoss loss;
    int rounds; /* boosting rounds (fixed; no early stopping) */
    int max_depth;
    double eta, gamma, min_child_weight, lambda;
    int nthread;
    uint64_t seed;
    bool hist; /* tree_method hist (binned features) instead of exact */
} CostModelParams;

/* REFERENCE.md values: rank, max_depth 3, eta 0.3, gamma 1e-4,
 * min_child_weight 1, lambda 1, nthread 1, exact; rounds as tuned (see costmodel.c). */
void CostModelParams_defaults(CostModelParams *this);
/* "rank" or "reg"; TT_ERR names the bad value. */
Status CostLoss_parse(const char *name, CostLoss *out, char *err);
const char *CostLoss_name(CostLoss loss);

/* true when the cost model can be used in this build; else writes why into err. */
bool CostModel_available(char *err);

typedef struct CostModel CostModel;

/* Trains a model on n rows (x is n * n_features floats, row-major) with
 * labels y (larger = better). groups (may be NULL): n_groups group sizes
 * summing to n, rows of a group contiguous; the rank loss only compares rows
 * within a group (used to rank several tasks' records together). NULL = all
 * rows form one group. Fails when n < 2 or XGBoost reports an error. */
CostModel *CostModel_train(const CostModelParams *params, const float *x, const float *y, int n, int n_features,
                           const unsigned *groups, int n_groups, char *err);
/* A custom loss: from the current raw predictions of the n training rows,
 * fills each row's gradient and hessian (second derivative) of the loss. */
typedef void (*CostObjective)(void *ctx, const float *pred, int n, float *grad, float *hess);
/* Trains like CostModel_train, but each boosting round fits the gradients
 * `objective` computes (params->loss is not used; predictions start at 0 and
 * are the plain sum of the trees). */
CostModel *CostModel_trainObjective(const CostModelParams *params, const float *x, int n, int n_features,
                                    CostObjective objective, void *ctx, char *err);
/* Scores n rows (n * featureCount floats) into out (n floats; larger = predicted faster). */
Status CostModel_predict(CostModel *this, const float *x, int n, float *out, char *err);
int CostModel_featureCount(const CostModel *this);
int CostModel_trainedOn(const CostModel *this); /* rows it was trained on */
double CostModel_trainSeconds(const CostModel *this);
void CostModel_delete(CostModel *this);

/* Spearman rank correlation of a and b (n values each; ties get their mean
 * rank). 0 when n < 2 or either side is constant. */
double rank_correlation(const double *a, const double *b, int n);

#endif
