/* tuner/net/ops/nn.c: the nn family's table (see op.h); the ops are in
 * ops/nn_conv.c, nn_gemm.c, nn_pool.c, nn_norm.c, nn_softmax.c, nn_einsum.c,
 * nn_loss.c, nn_quant.c and nn_rnn.c. */
#include "tuner/net/ops/nn_util.h"

#define NN_OP(op, lo, hi, outs, chk, inf, fn, fl)                                                                      \
    {                                                                                                                  \
        .name = op, .domain = "", .min_in = lo, .max_in = hi, .min_out = 1, .max_out = outs, .check = chk,             \
        .infer = inf, .run = fn, .flops = fl                                                                           \
    }

const OpDef OPS_NN[] = {
    NN_OP("Conv", 2, 3, 1, Conv_check, Conv_infer, Conv_run, Conv_flops),
    NN_OP("ConvTranspose", 2, 3, 1, Conv_check, ConvT_infer, ConvT_run, ConvT_flops),
    NN_OP("Gemm", 2, 3, 1, Gemm_check, Gemm_infer, Gemm_run, Gemm_flops),
    NN_OP("MatMul", 2, 2, 1, NULL, MatMul_infer, MatMul_run, MatMul_flops),
    NN_OP("ConvInteger", 2, 4, 1, Conv_check, QConv_infer, QConv_run, QConv_flops),
    NN_OP("QLinearConv", 8, 9, 1, Conv_check, QConv_infer, QConv_run, QConv_flops),
    NN_OP("MatMulInteger", 2, 4, 1, NULL, QMatMul_infer, QMatMul_run, QMatMul_flops),
    NN_OP("QLinearMatMul", 8, 8, 1, NULL, QMatMul_infer, QMatMul_run, QMatMul_flops),
    NN_OP("MaxPool", 1, 1, 2, Pool_check, Pool_infer, MaxPool_run, Pool_flops),
    NN_OP("AveragePool", 1, 1, 1, Pool_check, Pool_infer, AvgPool_run, Pool_flops),
    NN_OP("LpPool", 1, 1, 1, Pool_check, Pool_infer, LpPool_run, Pool_flops),
    NN_OP("GlobalAveragePool", 1, 1, 1, NULL, GlobalPool_infer, GlobalAvgPool_run, GlobalPool_flops),
    NN_OP("GlobalMaxPool", 1, 1, 1, NULL, GlobalPool_infer, GlobalMaxPool_run, GlobalPool_flops),
    NN_OP("BatchNormalization", 5, 5, 5, BatchNorm_check, BatchNorm_infer, BatchNorm_run, Norm_flops),
    NN_OP("InstanceNormalization", 3, 3, 1, NULL, InstanceNorm_infer, InstanceNorm_run, Norm_flops),
    NN_OP("LayerNormalization", 2, 3, 3, LayerNorm_check, LayerNorm_infer, LayerNorm_run, Norm_flops),
    NN_OP("GroupNormalization", 3, 3, 1, GroupNorm_check, GroupNorm_infer, GroupNorm_run, Norm_flops),
    NN_OP("MeanVarianceNormalization", 1, 1, 1, NULL, Nn_inferSame, Mvn_run, Norm_flops),
    NN_OP("LpNormalization", 1, 1, 1, LpNorm_check, Nn_inferSame, LpNorm_run, Norm_flops),
    NN_OP("LRN", 1, 1, 1, Lrn_check, Nn_inferSame, Lrn_run, Norm_flops),
    NN_OP("Softmax", 1, 1, 1, NULL, Softmax_infer, Softmax_run, Softmax_flops),
    NN_OP("LogSoftmax", 1, 1, 1, NULL, Softmax_infer, LogSoftmax_run, Softmax_flops),
    NN_OP("Hardmax", 1, 1, 1, NULL, Softmax_infer, Hardmax_run, Softmax_flops),
    NN_OP("Einsum", 1, 8, 1, Einsum_check, Einsum_infer, Einsum_run, Einsum_flops),
    NN_OP("NegativeLogLikelihoodLoss", 2, 3, 1, Loss_check, Loss_infer, Nll_run, Norm_flops),
    NN_OP("SoftmaxCrossEntropyLoss", 2, 3, 2, Loss_check, Loss_infer, Sce_run, Norm_flops),
    NN_OP("RNN", 3, 6, 2, Rnn_check, Rnn_infer, Rnn_run, Rnn_flops),
    NN_OP("GRU", 3, 6, 2, Rnn_check, Rnn_infer, Rnn_run, Rnn_flops),
    NN_OP("LSTM", 3, 8, 3, Rnn_check, Rnn_infer, Rnn_run, Rnn_flops),
    NN_OP("Dropout", 1, 3, 2, Dropout_check, Dropout_infer, Dropout_run, NULL),
    {.name = NULL},
};
