#!/usr/bin/env python3
"""Runs one ONNX model under ONNX Runtime or OpenVINO on the bench's inputs,
writes the outputs as .npy and prints the median latency.

usage: reference_run.py ort|openvino MODEL.onnx OUT_DIR THREADS REPEAT NAME=FILE.npy ...
Prints one line: "ENGINE median_ms=M min_ms=m runs=R".
"""
import os
import sys
import time

import numpy as np


def timed(fn, repeat):
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return times


def run_ort(model, feeds, threads):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return lambda: sess.run(None, feeds), names


def run_openvino(model, feeds, threads):
    import openvino as ov
    core = ov.Core()
    compiled = core.compile_model(model, "CPU", {"INFERENCE_NUM_THREADS": threads,
                                                 "INFERENCE_PRECISION_HINT": "f32"})
    req = compiled.create_infer_request()
    names = [o.get_any_name() for o in compiled.outputs]

    def go():
        req.infer(feeds)
        return [req.get_output_tensor(i).data.copy() for i in range(len(names))]
    return go, names


def main():
    engine, model, out_dir, threads, repeat = sys.argv[1:6]
    feeds = {}
    for a in sys.argv[6:]:
        name, path = a.split("=", 1)
        feeds[name] = np.load(path)
    fn, names = (run_ort if engine == "ort" else run_openvino)(model, feeds, int(threads))
    outs = fn()
    os.makedirs(out_dir, exist_ok=True)
    for n, o in zip(names, outs):
        np.save(os.path.join(out_dir, n + ".npy"), np.asarray(o))
    times = timed(fn, int(repeat))
    print(f"{engine} median_ms={np.median(times):.3f} min_ms={min(times):.3f} runs={len(times)}")


if __name__ == "__main__":
    main()
