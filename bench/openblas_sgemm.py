"""OpenBLAS cblas_sgemm at one thread, C = A * B, row-major float32, for
bench/search_table.sh: the system's libopenblas (the one kernel_bench links),
through ctypes, so that no Python package is needed.

    python3 openblas_sgemm.py [N]            (default 1024)

Warm-up, then 15 repeats, each of as many runs as last 50 ms (at least one);
prints one JSON line: {"n", "ms": median per run, "min_ms", "gflops" (at the
median), "lib"}."""
import ctypes
import ctypes.util
import json
import os
import statistics
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
n = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
name = None
for cand in ("libopenblas.so.0", ctypes.util.find_library("openblas")):
    if not cand:
        continue
    try:
        lib = ctypes.CDLL(cand)
        name = cand
        break
    except OSError:
        pass
if name is None:
    raise SystemExit("openblas_sgemm: no libopenblas on this machine (Debian: libopenblas0)")
lib.openblas_set_num_threads(1)
F = ctypes.c_float * (n * n)
a, b, c = F(), F(), F()
for i in range(0, n * n, 7):
    a[i] = (i % 13) * 0.1
    b[i] = (i % 11) * 0.1
sgemm = lib.cblas_sgemm
sgemm.argtypes = [ctypes.c_int] * 6 + [ctypes.c_float, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_int,
                                       ctypes.c_float, ctypes.c_void_p, ctypes.c_int]
ROW, NOTRANS = 101, 111


def run():
    sgemm(ROW, NOTRANS, NOTRANS, n, n, n, 1.0, a, n, b, n, 0.0, c, n)


for _ in range(3):
    run()
t0 = time.perf_counter()
run()
one = time.perf_counter() - t0
number = max(1, int(0.05 / one))
costs = []
for _ in range(15):
    t0 = time.perf_counter()
    for _ in range(number):
        run()
    costs.append((time.perf_counter() - t0) / number)
med = statistics.median(costs)
print(json.dumps({"n": n, "ms": med * 1e3, "min_ms": min(costs) * 1e3, "gflops": 2.0 * n ** 3 / med * 1e-9,
                  "lib": name}))
