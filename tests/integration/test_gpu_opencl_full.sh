#!/bin/bash
# The full OpenCL check of the GPU templates: 50 random valid configs per
# template (25 on a small shape, 25 on an odd one), each run on the OpenCL
# device (PoCL here) and compared with Workload_reference. The unit run of the
# same binary uses 4 per template.
set -euo pipefail
bin="${TT_BINARY_DIR:?}/tests/test_gpu_opencl"
[ -x "$bin" ] || { echo "missing $bin"; exit 1; }
TT_OCL_CONFIGS=50 exec "$bin"
