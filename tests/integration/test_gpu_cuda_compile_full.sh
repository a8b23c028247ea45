#!/bin/bash
# The full CUDA compile check: 200 random configs per GPU template (dense: 100 small-batch, 100 large-batch) for
# sm_90 through NVRTC + nvJitLink on 2 builder threads; each is prechecked out
# with a numeric reason or compiles with its resources recorded. The unit run
# of the same binary uses 30 per shape.
set -euo pipefail
bin="${TT_BINARY_DIR:?}/tests/test_gpu_cuda_compile"
[ -x "$bin" ] || { echo "missing $bin"; exit 1; }
TT_GPU_CONFIGS=200 exec "$bin"
