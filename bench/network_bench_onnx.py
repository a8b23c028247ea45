#!/usr/bin/env python3
"""bench/network_bench_onnx.py: the same network in ONNX Runtime.

Reads the graph and the data that `tunetop run --keep DIR` writes (DIR/graph.json,
DIR/data.bin = the parameters then the inputs, float32), builds the ONNX model of
that graph with the `onnx` package, checks its output against DIR/out.bin (what the
tunetop program computed) and times it with ONNX Runtime's CPU execution provider.

usage: network_bench_onnx.py DIR --threads T --repeat R --min-repeat-ms M
prints one line:  ORT <median ms> <mean ms> <min ms> <max ms> <repeats> <max abs diff vs tunetop>
"""
import argparse
import json
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build_model(g, data):
    tensors = g["tensors"]
    nodes, inits = [], []
    counter = [0]

    def name(t):
        return "t%d" % t

    def const(arr, hint):
        counter[0] += 1
        n = "%s_%d" % (hint, counter[0])
        inits.append(numpy_helper.from_array(np.ascontiguousarray(arr, dtype=np.float32), n))
        return n

    def ints(vals, hint):
        counter[0] += 1
        n = "%s_%d" % (hint, counter[0])
        inits.append(numpy_helper.from_array(np.array(vals, dtype=np.int64), n))
        return n

    def param(op, i):
        off, cnt = op["params"][i]
        return data[off:off + cnt]

    def tmp(hint):
        counter[0] += 1
        return "%s_v%d" % (hint, counter[0])

    for op in g["ops"]:
        k, a = op["kind"], op["attrs"]
        x = [name(t) for t in op["in"]]
        y = name(op["out"])
        xs = tensors[op["in"][0]]
        ys = tensors[op["out"]]
        if k in ("conv2d", "depthwise_conv2d"):
            grp = a["group"]
            cin = xs[1] // grp
            w = param(op, 0).reshape(a["co"], cin, a["kh"], a["kw"])
            nodes.append(helper.make_node("Conv", [x[0], const(w, "w")], [y], kernel_shape=[a["kh"], a["kw"]],
                                          strides=[a["stride_h"], a["stride_w"]],
                                          pads=[a["pad_h"], a["pad_w"], a["pad_h"], a["pad_w"]], group=grp))
        elif k == "dense":
            w = param(op, 0).reshape(a["n"], xs[1])
            nodes.append(helper.make_node("Gemm", [x[0], const(w, "w")], [y], transB=1))
        elif k == "batch_matmul":
            bt = tmp("bt")
            nodes.append(helper.make_node("Transpose", [x[1]], [bt], perm=[0, 2, 1]))
            nodes.append(helper.make_node("MatMul", [x[0], bt], [y]))
        elif k in ("bias_add", "batch_norm"):
            c = xs[1]
            shape = [1, c] + [1] * (len(xs) - 2)
            if k == "bias_add":
                nodes.append(helper.make_node("Add", [x[0], const(param(op, 0).reshape(shape), "b")], [y]))
            else:
                m = tmp("bn")
                nodes.append(helper.make_node("Mul", [x[0], const(param(op, 0).reshape(shape), "s")], [m]))
                nodes.append(helper.make_node("Add", [m, const(param(op, 1).reshape(shape), "t")], [y]))
        elif k == "relu":
            nodes.append(helper.make_node("Relu", [x[0]], [y]))
        elif k == "clip":
            nodes.append(helper.make_node("Clip", [x[0], const(np.array(a["alpha"]), "lo"),
                                                   const(np.array(a["beta"]), "hi")], [y]))
        elif k == "gelu":
            # 0.5 x (1 + erf(x / sqrt 2)), the exact form
            d, e, p, h = tmp("g"), tmp("g"), tmp("g"), tmp("g")
            nodes.append(helper.make_node("Div", [x[0], const(np.array(np.sqrt(2.0)), "r2")], [d]))
            nodes.append(helper.make_node("Erf", [d], [e]))
            nodes.append(helper.make_node("Add", [e, const(np.array(1.0), "one")], [p]))
            nodes.append(helper.make_node("Mul", [x[0], p], [h]))
            nodes.append(helper.make_node("Mul", [h, const(np.array(0.5), "half")], [y]))
        elif k == "scale":
            nodes.append(helper.make_node("Mul", [x[0], const(np.array(a["alpha"]), "a")], [y]))
        elif k == "add":
            nodes.append(helper.make_node("Add", [x[0], x[1]], [y]))
        elif k == "mask":
            b = a["k"]
            bh, rows, s = xs
            r1, r2 = tmp("m"), tmp("m")
            nodes.append(helper.make_node("Reshape", [x[0], ints([b, bh // b, rows, s], "sh")], [r1]))
            nodes.append(helper.make_node("Add", [r1, const(param(op, 0).reshape(b, 1, 1, s), "mask")], [r2]))
            nodes.append(helper.make_node("Reshape", [r2, ints(xs, "sh")], [y]))
        elif k in ("max_pool2d", "avg_pool2d"):
            kind = "MaxPool" if k == "max_pool2d" else "AveragePool"
            extra = {} if kind == "MaxPool" else {"count_include_pad": 0}
            nodes.append(helper.make_node(kind, [x[0]], [y], kernel_shape=[a["k"], a["k"]],
                                          strides=[a["stride"], a["stride"]], pads=[a["pad"]] * 4, **extra))
        elif k == "global_avg_pool2d":
            nodes.append(helper.make_node("GlobalAveragePool", [x[0]], [y]))
        elif k == "concatenate":
            nodes.append(helper.make_node("Concat", x, [y], axis=1))
        elif k == "softmax":
            nodes.append(helper.make_node("Softmax", [x[0]], [y], axis=-1))
        elif k == "layer_norm":
            nodes.append(helper.make_node("LayerNormalization", [x[0], const(param(op, 0), "g"),
                                                                 const(param(op, 1), "be")], [y],
                                          axis=-1, epsilon=a["alpha"]))
        elif k == "flatten":
            nodes.append(helper.make_node("Reshape", [x[0], ints(ys, "sh")], [y]))
        elif k in ("split_heads", "split_heads_t", "merge_heads"):
            heads, seq = a["k"], a["stride"]
            r1, t1 = tmp("h"), tmp("h")
            if k == "merge_heads":
                b, d = xs[0] // heads, xs[2]
                nodes.append(helper.make_node("Reshape", [x[0], ints([b, heads, seq, d], "sh")], [r1]))
                nodes.append(helper.make_node("Transpose", [r1], [t1], perm=[0, 2, 1, 3]))
            else:
                b, d = xs[0] // seq, xs[1] // heads
                nodes.append(helper.make_node("Reshape", [x[0], ints([b, seq, heads, d], "sh")], [r1]))
                perm = [0, 2, 1, 3] if k == "split_heads" else [0, 2, 3, 1]
                nodes.append(helper.make_node("Transpose", [r1], [t1], perm=perm))
            nodes.append(helper.make_node("Reshape", [t1, ints(ys, "sh")], [y]))
        else:
            raise SystemExit("network_bench_onnx: no ONNX form for op kind '%s'" % k)

    inputs = [helper.make_tensor_value_info(name(t), TensorProto.FLOAT, tensors[t]) for t in g["inputs"]]
    outputs = [helper.make_tensor_value_info(name(g["output"]), TensorProto.FLOAT, tensors[g["output"]])]
    graph = helper.make_graph(nodes, g["name"], inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--min-repeat-ms", type=float, default=200)
    args = ap.parse_args()
    import onnxruntime as ort

    g = json.load(open(args.dir + "/graph.json"))
    raw = np.fromfile(args.dir + "/data.bin", dtype=np.float32)
    n_params = g["n_params"]
    params = raw[:n_params]
    model = build_model(g, params)
    feeds, off = {}, n_params
    for t in g["inputs"]:
        shape = g["tensors"][t]
        cnt = int(np.prod(shape))
        feeds["t%d" % t] = raw[off:off + cnt].reshape(shape)
        off += cnt
    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    out = sess.run(None, feeds)[0]
    want = np.fromfile(args.dir + "/out.bin", dtype=np.float32).reshape(out.shape)
    diff = float(np.max(np.abs(out - want)))
    tol = 1e-3 * float(np.max(np.abs(want))) + 1e-3 * np.abs(want)
    if not np.all(np.abs(out - want) <= tol):
        print("network_bench_onnx: ONNX Runtime's output differs from tunetop's by up to %.3g" % diff, file=sys.stderr)
        sys.exit(1)
    # timing: like the tunetop program, NUMBER runs per repeat, raised until a repeat lasts min_repeat_ms
    number = 1
    times = []
    for _ in range(args.repeat):
        while True:
            t0 = time.perf_counter()
            for _ in range(number):
                sess.run(None, feeds)
            dt = time.perf_counter() - t0
            if dt * 1e3 >= args.min_repeat_ms or number >= 1000000:
                break
            number = max(int(args.min_repeat_ms * 1e-3 / max(dt / number, 1e-9) * 1.618) + 1, int(number * 1.618) + 1)
        times.append(dt / number * 1e3)
    times.sort()
    med = times[len(times) // 2] if len(times) % 2 else 0.5 * (times[len(times) // 2 - 1] + times[len(times) // 2])
    print("ORT %.4f %.4f %.4f %.4f %d %.3g" % (med, sum(times) / len(times), times[0], times[-1], len(times), diff))


if __name__ == "__main__":
    main()
