/* tests/unit/test_onnx_npy.c: .npy files: written and read back for every
 * type, numpy's own bytes read, Fortran order and foreign types refused. */
#include <unistd.h>

#include "tests/check.h"
#include "tuner/net/npy.h"

static char dir[] = "/tmp/tt-npy-XXXXXX";

TEST(every_type_and_rank_round_trips) {
    const NdType types[] = {ND_F32, ND_F64, ND_F16, ND_I64, ND_I32, ND_I16,
                            ND_I8,  ND_U64, ND_U32, ND_U16, ND_U8,  ND_BOOL};
    const NdShape shapes[] = {
        {.rank = 0}, {.rank = 1, .dim = {5}}, {.rank = 3, .dim = {2, 3, 4}}, {.rank = 2, .dim = {0, 3}}};
    char path[128], err[TT_ERRLEN] = "";
    snprintf(path, sizeof path, "%s/a.npy", dir);
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            NdTensor t = {0}, back = {0};
            CHECK_EQ_INT(NdTensor_alloc(&t, types[i], &shapes[s], err), TT_OK);
            for (int64_t k = 0; k < t.count; k++)
                NdTensor_set(&t, k, (double)(k % 7) - (types[i] == ND_BOOL ? 0 : 2));
            CHECK_EQ_INT(Npy_write(path, &t, err), TT_OK);
            CHECK_EQ_INT(Npy_read(path, &back, err), TT_OK);
            CHECK_EQ_INT(back.type, t.type);
            CHECK(NdShape_equal(&back.shape, &t.shape));
            CHECK(t.count == 0 || memcmp(back.data, t.data, (size_t)t.count * NdType_size(t.type)) == 0);
            FILE *f = fopen(path, "rb");
            fseek(f, 0, SEEK_END);
            CHECK_EQ_INT((ftell(f) - (long)(t.count * (int64_t)NdType_size(t.type))) % 64, 0);
            fclose(f);
            NdTensor_free(&t);
            NdTensor_free(&back);
        }
}

/* bytes as numpy 1.x writes np.arange(6, dtype='<f4').reshape(2, 3) */
static size_t numpy_bytes(unsigned char *b, const char *dict, const void *data, size_t n) {
    size_t hl = 118;
    memcpy(b, "\x93NUMPY\x01\x00", 8);
    b[8] = (unsigned char)hl, b[9] = 0;
    memset(b + 10, ' ', hl);
    memcpy(b + 10, dict, strlen(dict));
    b[10 + hl - 1] = '\n';
    memcpy(b + 10 + hl, data, n);
    return 10 + hl + n;
}

TEST(numpy_headers_are_read_and_foreign_ones_refused) {
    float v[6] = {0, 1, 2, 3, 4, 5};
    unsigned char b[512];
    NdTensor t = {0};
    char err[TT_ERRLEN] = "";
    size_t n = numpy_bytes(b, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", v, sizeof v);
    CHECK_EQ_INT(Npy_readMemory(b, n, "x.npy", &t, err), TT_OK);
    CHECK_EQ_INT(t.shape.rank, 2);
    CHECK_EQ_INT(t.shape.dim[1], 3);
    CHECK_NEAR(NdTensor_get(&t, 5), 5.0, 0);
    NdTensor_free(&t);
    n = numpy_bytes(b, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", v, sizeof v);
    CHECK_EQ_INT(Npy_readMemory(b, n, "x.npy", &t, err), TT_ERR);
    CHECK_CONTAINS(err, "Fortran order");
    n = numpy_bytes(b, "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", v, sizeof v);
    CHECK_EQ_INT(Npy_readMemory(b, n, "x.npy", &t, err), TT_ERR);
    CHECK_CONTAINS(err, "numpy type '>f4'");
    n = numpy_bytes(b, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), }", v, sizeof v);
    CHECK_EQ_INT(Npy_readMemory(b, n, "x.npy", &t, err), TT_ERR);
    CHECK_CONTAINS(err, "x.npy has 24 bytes of data");
    CHECK_EQ_INT(Npy_readMemory(b, 9, "x.npy", &t, err), TT_ERR);
    CHECK_EQ_INT(Npy_readMemory("hello world", 11, "x.npy", &t, err), TT_ERR);
    CHECK_CONTAINS(err, "not a .npy file");
    CHECK_EQ_INT(Npy_read("/dev/null", &t, err), TT_ERR);
    CHECK_CONTAINS(err, "not a regular file");
}

int main(void) {
    if (!mkdtemp(dir)) return 1;
    RUN(every_type_and_rank_round_trips);
    RUN(numpy_headers_are_read_and_foreign_ones_refused);
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) return 1;
    return check_summary();
}
