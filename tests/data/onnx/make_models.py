#!/usr/bin/env python3
"""Makes the small ONNX models the suite runs (tests/integration/test_model_cli.sh):
three networks of tunetop's own, exported by torch.onnx with random weights from a
fixed seed, with an input each and ONNX Runtime's output on it, so that the
suite checks tunetop against ONNX Runtime without either at test time.

Run by hand in a virtual environment with torch, onnxruntime and numpy (the
model bench's: bench/models/); the files it writes are committed:
    python tests/data/onnx/make_models.py tests/data/onnx [NAME...]
"""
import os
import sys

import numpy as np
import onnxruntime as ort
import torch
from torch import nn


class TinyCnn(nn.Module):
    """A stem, a residual block, a depthwise-separable block with ReLU6, pooling and a classifier."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU())
        self.pool = nn.MaxPool2d(3, stride=2, padding=1)
        self.c1 = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        self.c2 = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16))
        self.dw = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1, groups=16), nn.ReLU6(),
                                nn.Conv2d(16, 32, 1), nn.BatchNorm2d(32), nn.ReLU6())
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        x = self.pool(self.stem(x))
        x = torch.relu(self.c2(self.c1(x)) + x)
        x = self.dw(x)
        return self.head(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


class TinySe(nn.Module):
    """MobileNet-V3's pieces at 14x14 over 64 channels: 1x1 convolutions one after another, a lone
    HardSwish between kernels, a depthwise convolution, a squeeze-excitation block and a residual."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64), nn.Hardswish())
        self.expand = nn.Sequential(nn.Conv2d(64, 64, 1, bias=False), nn.BatchNorm2d(64), nn.Hardswish())
        self.dw = nn.Sequential(nn.Conv2d(64, 64, 3, padding=1, groups=64, bias=False), nn.BatchNorm2d(64),
                                nn.ReLU())
        self.se1, self.se2 = nn.Conv2d(64, 16, 1), nn.Conv2d(16, 64, 1)
        self.project = nn.Sequential(nn.Conv2d(64, 64, 1, bias=False), nn.BatchNorm2d(64))
        self.last = nn.Sequential(nn.Conv2d(64, 128, 1), nn.Hardswish())
        self.head = nn.Linear(128, 10)

    def forward(self, x):
        x = self.stem(x)
        y = self.dw(self.expand(x))
        pooled = nn.functional.adaptive_avg_pool2d(y, 1)
        s = nn.functional.hardsigmoid(self.se2(torch.relu(self.se1(pooled))))
        x = self.last(self.project(y * s) + x)
        return self.head(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


class TinyTransformer(nn.Module):
    """One pre-norm encoder layer (attention with a mask, a GELU MLP) over a sequence of 16."""

    def __init__(self, d=32, heads=4):
        super().__init__()
        self.heads, self.d = heads, d
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x, mask):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        split = lambda t: t.reshape(b, s, self.heads, d // self.heads).transpose(1, 2)
        q, k, v = split(q), split(k), split(v)
        att = q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5 + (1.0 - mask[:, None, None, :]) * -10000.0
        y = (att.softmax(-1) @ v).transpose(1, 2).reshape(b, s, d)
        x = x + self.proj(y)
        return x + self.mlp(self.ln2(x))


def export(out, name, model, inputs, names):
    torch.manual_seed(0)
    model.eval()
    path = os.path.join(out, name + ".onnx")
    with torch.no_grad():
        torch.onnx.export(model, inputs, path, input_names=names, output_names=["output"], opset_version=17,
                          dynamo=False)
    feeds = {n: t.numpy() for n, t in zip(names, inputs)}
    for n, a in feeds.items():
        np.save(os.path.join(out, f"{name}.{n}.npy"), a)
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    np.save(os.path.join(out, f"{name}.ort_output.npy"), want)


def main():
    out = sys.argv[1]
    only = sys.argv[2:]  # names to write (default all): the others' files stay as committed
    if not only or "tiny_se" in only:
        torch.manual_seed(0)
        export(out, "tiny_se", TinySe(), (torch.randn(1, 3, 28, 28),), ["x"])
    if only:
        return
    torch.manual_seed(0)
    export(out, "tiny_cnn", TinyCnn(), (torch.randn(1, 3, 32, 32),), ["x"])
    torch.manual_seed(0)
    mask = torch.ones(1, 16)
    mask[0, 12:] = 0
    export(out, "tiny_transformer", TinyTransformer(), (torch.randn(1, 16, 32), mask), ["x", "mask"])


if __name__ == "__main__":
    main()
