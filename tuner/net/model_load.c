/* tuner/net/model_load.c: an ONNX model ready for tunetop (see model_load.h). */
#include "tuner/net/model_load.h"

#include "tuner/net/onnx_read.h"
#include "tuner/net/passes.h"

/* Shape inference and constant folding until neither learns more: a shape
 * found downstream of a folded chain lets the next chain fold (exporters
 * compute each attention block's Reshape from the Shape of the block before). */
static Status infer_and_fold(NetModel *m, char *err) {
    for (int round = 0; round < 64; round++) {
        int folded = 0;
        if (NetPass_inferShapes(m, err) != TT_OK || NetPass_foldConstants(m, &folded, err) != TT_OK) return TT_ERR;
        if (!folded) return TT_OK;
    }
    return NetPass_inferShapes(m, err);
}

Status Model_load(const char *path, const char *const *input_shapes, int n_input_shapes, NetModel *m, char *err) {
    if (Onnx_read(path, m, err) != TT_OK) return TT_ERR;
    if (NetModel_bind(m, err) != TT_OK || NetPass_fixInputs(m, input_shapes, n_input_shapes, err) != TT_OK ||
        NetPass_removeIdentity(m, NULL, err) != TT_OK || infer_and_fold(m, err) != TT_OK ||
        NetPass_foldBatchNorm(m, NULL, err) != TT_OK || NetPass_inferShapes(m, err) != TT_OK) {
        NetModel_done(m);
        return TT_ERR;
    }
    return TT_OK;
}

Status Model_extract(const char *path, const char *const *input_shapes, int n_input_shapes, unsigned op_mask,
                     NetworkTask **tasks, int *n_tasks, NetworkUntuned **untuned, int *n_untuned, char *err) {
    NetModel m;
    NetModel_init(&m);
    if (Model_load(path, input_shapes, n_input_shapes, &m, err) != TT_OK) return TT_ERR;
    ModelTasks mt;
    Status st = ModelTasks_build(&m, op_mask, &mt, err);
    if (st == TT_OK) {
        *tasks = mt.tasks, *n_tasks = mt.n_tasks, *untuned = mt.untuned, *n_untuned = mt.n_untuned;
        mt.tasks = NULL, mt.untuned = NULL;
        ModelTasks_done(&mt);
    }
    NetModel_done(&m);
    return st;
}
