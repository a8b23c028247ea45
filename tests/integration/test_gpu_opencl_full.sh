#!/bin/bash
# The full OpenCL check of the GPU templates: 17 random valid configs per shape
# (3 shapes per conv template, 4 for dense: at least 50 per template), each run
# on the OpenCL device (PoCL here) and compared with Workload_reference.
# The unit run of the same binary uses 2 per shape.
set -euo pipefail
bin="${TT_BINARY_DIR:?}/tests/test_gpu_opencl"
[ -x "$bin" ] || { echo "missing $bin"; exit 1; }
TT_OCL_CONFIGS=17 exec "$bin"
