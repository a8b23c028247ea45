/* tuner/search/te_model.h: the learned cost model of template-free search: gradient
 * boosted trees over program features (kernels/templates/te/te_features.h),
 * trained with the pack-sum loss.
 *
 * A program (a schedule of a tensor expression) is several rows, one per
 * statement of its loop nest; its score is the sum of its rows' predictions.
 * Its label is its throughput normalised by the best of its task (the
 * workload key of its DAG; 0 for a failed program), so the records of many
 * tasks train one model (warm start: a new task is ranked by what the others
 * taught). The loss is sum_p w_p (score_p - y_p)^2 / 2 with w_p = y_p + 0.1
 * (good programs weigh more, failed ones a little); each row's gradient is
 * its program's w_p (score_p - y_p) and its hessian w_p, given to XGBoost
 * round by round (CostModel_trainObjective, tuner/search/costmodel.h).
 *
 * What makes the records of other tasks help rather than hurt (TeModelOptions,
 * chosen on bench/te_model_bench): the label is the mean of the program's
 * share of its task's best and its rank within its task (its throughput's
 * percentile among the task's programs that ran), so every task spans [0, 1]
 * alike whatever the spread of its throughputs; each task weighs
 * the same in total however many records it has; and every row carries three
 * task-level values (the program's statement count, log2 of the task's FLOPs,
 * its stage count) so that trees can tell tasks, and a program's size, apart.
 * A fit uses at most max_programs programs (the most recent), which bounds its
 * time whatever the log holds.
 *
 * One TeModel is used by one thread at a time. DAGs passed in are read during
 * the call only (features are copied); the model keeps each task's key.
 * No printing: errors are one sentence in err. */
#ifndef TT_TUNER_TE_MODEL_H
#define TT_TUNER_TE_MODEL_H

#include <stdbool.h>

#include "base/status.h"
#include "space/steps.h"
#include "te/dag.h"
#include "tuner/search/costmodel.h"

typedef struct TeModel TeModel;

typedef enum {
    TE_LABEL_RANK = 0, /* the percentile of the program's throughput within its task */
    TE_LABEL_BEST,     /* the program's throughput over its task's best */
    TE_LABEL_MIX       /* the mean of the two */
} TeLabel;

typedef struct TeModelOptions {
    CostModelParams xgb;
    TeLabel label;
    bool balance;       /* every task weighs the same in total */
    bool task_features; /* the three task-level values of each row (else 0) */
    int max_programs;   /* per fit, the most recent ones; 0 = all */
} TeModelOptions;

/* The defaults (TeModel_new with opt NULL), see te_model.c. */
void TeModel_defaults(TeModelOptions *opt);

/* NULL (err says why) when XGBoost is not built in. */
TeModel *TeModel_new(const TeModelOptions *opt, char *err);
void TeModel_delete(TeModel *this);

/* Adds n measured programs of the task dag (steps[i], gflops[i] <= 0 =
 * failed). Features are extracted now; a schedule that does not lower is
 * skipped (*added, may be NULL, counts the others). Does not train. */
Status TeModel_add(TeModel *this, const TeDag *dag, const Steps *steps, const double *gflops, int n, int *added,
                   char *err);
/* Adds the records of a log whose task is one of dags (matched by the
 * workload key, te=...) and that carry steps; *added counts them. */
Status TeModel_addLog(TeModel *this, const char *path, const TeDag *const *dags, int n_dags, int *added, char *err);

/* Trains a new model on everything added so far (replacing the old one).
 * Fails when fewer than 2 programs were added or XGBoost fails. */
Status TeModel_fit(TeModel *this, char *err);
bool TeModel_trained(const TeModel *this);
int TeModel_programs(const TeModel *this);  /* added so far */
int TeModel_trainedOn(const TeModel *this); /* programs of the last fit */

/* Scores n schedules of dag into out: the predicted normalised throughput
 * (larger = faster); -INFINITY for a schedule that does not lower; 0 for
 * all before the first fit. */
Status TeModel_predict(TeModel *this, const TeDag *dag, const Steps *steps, int n, float *out, char *err);

/* How well the model predicted a task's programs before they were measured
 * (every program TeModel_add gets while a fit exists is scored first, by the
 * model of the last fit). GFLOPS predictions: the label mapped back through
 * the task's measured throughputs at the last fit (a percentile to the
 * GFLOPS of that percentile, a share of the best to that share of it). */
typedef struct TeModelQuality {
    int predicted;         /* programs of the task scored before they were measured */
    double best_gflops;    /* the best measured among those */
    double best_predicted; /* what the model predicted for that one, GFLOPS */
    int round_n;           /* programs that ran between the last two fits, scored by the first */
    double round_rho;      /* their Spearman rank correlation, prediction vs measured (0 if round_n < 2) */
} TeModelQuality;
/* false (out zeroed) when the task (its dag's key) has no such program. */
bool TeModel_quality(const TeModel *this, const char *task_key, TeModelQuality *out);

/* Seconds the last calls spent: fit (all of it), and predict split into the
 * feature extraction (lowering included) and the trees; and every predict
 * since the last fit: its programs and seconds (a round of a search). */
typedef struct TeModelTimes {
    double fit_s, predict_features_s, predict_trees_s;
    int since_fit_programs;
    double since_fit_s;
} TeModelTimes;
TeModelTimes TeModel_times(const TeModel *this);

#endif
