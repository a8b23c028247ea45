"""MetaSchedule (TVM's tuner) on one operator of bench/search_table.sh, one thread.

    python metaschedule_ops.py OP TRIALS WORKDIR OUT.jsonl [SEED]

OP is one of conv2d, dense, matmul, softmax, layer_norm, max_pool, at the
sizes of examples/te/OP.te (the same computation tunetop's expression
describes). The target is llvm with -mcpu of this machine (LLVM's host CPU
name) and num-cores=1; the runtime runs one thread (TVM_NUM_THREADS=1, set
by the caller). Every measured candidate is written to OUT.jsonl as it comes
back, in the order of measurement: {"i": n, "t": seconds since the tuning
started, "s": mean run seconds or null for a failed one}. The last line is
{"done": true, "wall_s": ...}. Run by bench/search_table.sh."""
import json
import os
import sys
import time

import tvm
from tvm import te
import tvm.s_tir.meta_schedule as ms
from tvm.ir.utils import derived_object

op, trials, work, out_path = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
seed = int(sys.argv[5]) if len(sys.argv) > 5 else 1


def conv2d():
    n, c, h, w, k, r, s, p = 1, 64, 56, 56, 64, 3, 3, 1
    X = te.placeholder((n, c, h, w), name="X")
    F = te.placeholder((k, c, r, s), name="F")
    Xp = te.compute((n, c, h + 2 * p, w + 2 * p),
                    lambda a, b, y, x: te.if_then_else(
                        tvm.tirx.all(y >= p, y < h + p, x >= p, x < w + p), X[a, b, y - p, x - p], 0.0),
                    name="Xp")
    rc, rr, rs = te.reduce_axis((0, c), "c"), te.reduce_axis((0, r), "r"), te.reduce_axis((0, s), "s")
    Y = te.compute((n, k, h, w), lambda a, o, y, x: te.sum(Xp[a, rc, y + rr, x + rs] * F[o, rc, rr, rs],
                                                           axis=[rc, rr, rs]), name="Y")
    return [X, F, Y]


def dense():
    m, n, k = 1, 1000, 512
    X = te.placeholder((m, k), name="X")
    W = te.placeholder((n, k), name="W")
    rk = te.reduce_axis((0, k), "k")
    return [X, W, te.compute((m, n), lambda i, j: te.sum(X[i, rk] * W[j, rk], axis=rk), name="Y")]


def matmul():
    n = 1024
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    rk = te.reduce_axis((0, n), "k")
    return [A, B, te.compute((n, n), lambda i, j: te.sum(A[i, rk] * B[rk, j], axis=rk), name="C")]


def softmax():
    m, n = 128, 1000
    X = te.placeholder((m, n), name="X")
    j1, j2 = te.reduce_axis((0, n), "j"), te.reduce_axis((0, n), "j")
    Mx = te.compute((m,), lambda i: te.max(X[i, j1], axis=j1), name="Mx")
    E = te.compute((m, n), lambda i, j: te.exp(X[i, j] - Mx[i]), name="E")
    S = te.compute((m,), lambda i: te.sum(E[i, j2], axis=j2), name="S")
    return [X, te.compute((m, n), lambda i, j: E[i, j] / S[i], name="Y")]


def layer_norm():
    m, n = 128, 768
    X = te.placeholder((m, n), name="X")
    G = te.placeholder((n,), name="G")
    B = te.placeholder((n,), name="Bias")
    j1, j2 = te.reduce_axis((0, n), "j"), te.reduce_axis((0, n), "j")
    # a reduction must be a compute of its own in TVM's te: the sums, then the divisions
    Sum = te.compute((m,), lambda i: te.sum(X[i, j1], axis=j1), name="Sum")
    Mean = te.compute((m,), lambda i: Sum[i] / n, name="Mean")
    Sq = te.compute((m,), lambda i: te.sum((X[i, j2] - Mean[i]) * (X[i, j2] - Mean[i]), axis=j2), name="Sq")
    Var = te.compute((m,), lambda i: Sq[i] / n, name="Var")
    Y = te.compute((m, n), lambda i, j: (X[i, j] - Mean[i]) * te.rsqrt(Var[i] + 1e-5) * G[j] + B[j], name="Y")
    return [X, G, B, Y]


def max_pool():
    n, c, h, w = 1, 64, 112, 112
    oh, ow = (h - 1) // 2 + 1, (w - 1) // 2 + 1
    X = te.placeholder((n, c, h, w), name="X")
    r, s = te.reduce_axis((0, 3), "r"), te.reduce_axis((0, 3), "s")
    return [X, te.compute((n, c, oh, ow), lambda a, b, y, x: te.max(
        te.if_then_else(tvm.tirx.all(2 * y + r >= 1, 2 * y + r < h + 1, 2 * x + s >= 1, 2 * x + s < w + 1),
                        X[a, b, 2 * y + r - 1, 2 * x + s - 1], tvm.tirx.const(-3.4e38, "float32")),
        axis=[r, s]), name="Y")]


OPS = {"conv2d": conv2d, "dense": dense, "matmul": matmul, "softmax": softmax, "layer_norm": layer_norm,
       "max_pool": max_pool}

out = open(out_path, "w", buffering=1)
t0 = time.time()
count = [0]


@derived_object
class Trace(ms.measure_callback.PyMeasureCallback):
    """Writes each measured candidate's mean run time, in order, as it comes back."""

    def apply(self, task_scheduler, task_id, measure_candidates, builder_results, runner_results):
        now = time.time() - t0
        for res in runner_results:
            secs = [float(x) for x in res.run_secs] if res.run_secs else []
            mean = sum(secs) / len(secs) if secs and res.error_msg is None else None
            if mean is not None and mean >= 1e9:
                mean = None  # a failed build or run is recorded as 1e10 s
            count[0] += 1
            out.write(json.dumps({"i": count[0], "t": now, "s": mean}) + "\n")


cpu = tvm.target.codegen.llvm_get_system_cpu()
target = tvm.target.Target({"kind": "llvm", "mcpu": cpu, "num-cores": 1})
func = te.create_prim_func(OPS[op]())
print(f"metaschedule {op}: tvm {tvm.__version__}, target llvm -mcpu={cpu} num-cores=1, {trials} trials, "
      f"TVM_NUM_THREADS={os.environ.get('TVM_NUM_THREADS', '(unset)')}", flush=True)
# Generous timeouts: each builder and runner worker imports TVM first, which
# takes tens of seconds on a loaded machine.
ms.tune_tir(mod=func, target=target, work_dir=work, max_trials_global=trials, num_trials_per_iter=64,
            builder=ms.builder.LocalBuilder(max_workers=2, timeout_sec=600),
            runner=ms.runner.LocalRunner(timeout_sec=300),
            measure_callbacks=ms.measure_callback.MeasureCallback.create("default") + [Trace()],
            seed=seed)
out.write(json.dumps({"done": True, "wall_s": time.time() - t0, "target": str(target)}) + "\n")
out.close()
