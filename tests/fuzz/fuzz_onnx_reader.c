/* tests/fuzz/fuzz_onnx_reader.c: the ONNX reader from memory (and the same
 * bytes as a serialized TensorProto). Properties: a model it accepts is
 * sorted (every live node reads only graph inputs, constants and outputs
 * of nodes before it) with every id in range, and binding it either works
 * or says why in one line; anything it refuses gets one line (unless a name
 * in the input itself carries a newline). */
#include <stdint.h>

#include "tests/fuzz/fuzz_common.h"
#include "tuner/net/onnx_read.h"

static void check_sorted(const NetModel *m) {
    for (int i = 0; i < m->n_nodes; i++) {
        const NetNode *n = &m->nodes[i];
        if (n->dead) continue;
        for (int k = 0; k < n->n_in + n->n_out; k++) {
            int v = k < n->n_in ? n->in[k] : n->out[k - n->n_in];
            PROPERTY(v >= -1 && v < m->n_values, "node %d has value id %d of %d", i, v, m->n_values);
            if (v < 0 || k >= n->n_in) continue;
            const NetValue *val = &m->values[v];
            PROPERTY(val->is_input || val->is_const || (val->producer >= 0 && val->producer < i),
                     "node %d reads '%s', produced by %d", i, val->name, val->producer);
        }
    }
    for (int j = 0; j < m->n_inputs + m->n_outputs; j++) {
        int v = j < m->n_inputs ? m->inputs[j] : m->outputs[j - m->n_inputs];
        PROPERTY(v >= 0 && v < m->n_values, "graph input/output %d has value id %d", j, v);
    }
}

static void check_line(const char *err, int has_newline, const char *what) {
    PROPERTY(err[0] && (has_newline || !strchr(err, '\n')), "%s without one line: '%s'", what, err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int has_newline = memchr(data, '\n', size) != NULL;
    NetModel m;
    char err[TT_ERRLEN] = "";
    if (Onnx_readMemory(data, size, NULL, &m, err) == TT_OK) {
        check_sorted(&m);
        err[0] = '\0';
        if (NetModel_bind(&m, err) != TT_OK) check_line(err, has_newline, "bind refused");
        NetModel_done(&m);
    } else
        check_line(err, has_newline, "refused");
    NdTensor t = {0};
    if (Onnx_readTensorMemory(data, size, &t, NULL, 0, err) == TT_OK) {
        int64_t count = 1;
        for (int d = 0; d < t.shape.rank; d++)
            count *= t.shape.dim[d];
        PROPERTY(count == t.count && (count == 0 || t.data), "tensor of %lld elements holds %lld", (long long)count,
                 (long long)t.count);
        NdTensor_free(&t);
    } else
        check_line(err, has_newline, "tensor refused");
    return 0;
}
