"""A 20-trial MetaSchedule run of a 128x128x128 float32 matmul on the CPU, written
to a work directory; prints TVM's best mean run time over the database, which
`tunetop best WORKDIR` must report too. Run by bench/tvm_metaschedule.sh."""
import sys

import tvm
from tvm import te
import tvm.s_tir.meta_schedule as ms

work = sys.argv[1]
trials = int(sys.argv[2]) if len(sys.argv) > 2 else 20
A = te.placeholder((128, 128), name="A")
B = te.placeholder((128, 128), name="B")
k = te.reduce_axis((0, 128), name="k")
C = te.compute((128, 128), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
func = te.create_prim_func([A, B, C])
target = tvm.target.Target({"kind": "llvm", "num-cores": 2})
# generous timeouts: each builder/runner worker imports TVM first, which takes
# tens of seconds on a loaded machine (the default 30 s then fails every build)
db = ms.tune_tir(mod=func, target=target, work_dir=work, max_trials_global=trials, num_trials_per_iter=10,
                 builder=ms.builder.LocalBuilder(max_workers=1, timeout_sec=600),
                 runner=ms.runner.LocalRunner(timeout_sec=300))
recs = db.get_all_tuning_records()
means = [sum(float(x) for x in r.run_secs) / len(r.run_secs) for r in recs if r.run_secs]
ok = [m for m in means if m < 1e9]  # MetaSchedule records a failed build or run as 1e10 s
print("tvm", tvm.__version__, "records", len(recs), "measured", len(ok),
      "best_mean_ms %.5g" % (min(ok) * 1e3) if ok else "best_mean_ms none")
