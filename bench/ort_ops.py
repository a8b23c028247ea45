"""ONNX Runtime's CPU kernels on one-op graphs at the sizes of examples/te/OP.te,
one thread, for bench/search_table.sh.

    python ort_ops.py OP [OP ...]        OP: softmax, layer_norm, max_pool

Per op: a graph of that one ONNX op (opset 17: Softmax on the last axis of
128x1000; LayerNormalization of 128x768 over the last axis with scale and
bias, epsilon 1e-5; MaxPool 3x3 stride 2 pads 1 of 1x64x112x112), a session
with intra_op_num_threads=1, inter_op_num_threads=1, sequential execution and
every graph optimisation, inputs from a fixed seed. Warm-up, then 15 repeats,
each of as many runs as last 20 ms (at least one); prints one JSON line per op:
{"op", "us": median microseconds per run, "min_us", "repeats", "ort": version}."""
import json
import statistics
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper


def graph(op):
    f = TensorProto.FLOAT
    if op == "softmax":
        x = np.random.default_rng(1).standard_normal((128, 1000), dtype=np.float32)
        node = helper.make_node("Softmax", ["X"], ["Y"], axis=-1)
        ins, feeds, out = [helper.make_tensor_value_info("X", f, x.shape)], {"X": x}, (128, 1000)
    elif op == "layer_norm":
        rng = np.random.default_rng(1)
        x = rng.standard_normal((128, 768), dtype=np.float32)
        g = rng.standard_normal((768,), dtype=np.float32)
        b = rng.standard_normal((768,), dtype=np.float32)
        node = helper.make_node("LayerNormalization", ["X", "G", "Bias"], ["Y"], axis=-1, epsilon=1e-5)
        ins = [helper.make_tensor_value_info(n, f, a.shape) for n, a in (("X", x), ("G", g), ("Bias", b))]
        feeds, out = {"X": x, "G": g, "Bias": b}, (128, 768)
    elif op == "max_pool":
        x = np.random.default_rng(1).standard_normal((1, 64, 112, 112), dtype=np.float32)
        node = helper.make_node("MaxPool", ["X"], ["Y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
        ins, feeds, out = [helper.make_tensor_value_info("X", f, x.shape)], {"X": x}, (1, 64, 56, 56)
    else:
        raise SystemExit(f"ort_ops: unknown op {op}")
    g = helper.make_graph([node], op, ins, [helper.make_tensor_value_info("Y", f, out)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model.SerializeToString(), feeds


for op in sys.argv[1:]:
    model, feeds = graph(op)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    for _ in range(5):
        sess.run(None, feeds)
    t0 = time.perf_counter()
    sess.run(None, feeds)
    one = time.perf_counter() - t0
    number = max(1, int(0.02 / max(one, 1e-7)))
    costs = []
    for _ in range(15):
        t0 = time.perf_counter()
        for _ in range(number):
            sess.run(None, feeds)
        costs.append((time.perf_counter() - t0) / number)
    print(json.dumps({"op": op, "us": statistics.median(costs) * 1e6, "min_us": min(costs) * 1e6, "repeats": 15,
                      "number": number, "ort": ort.__version__}), flush=True)
