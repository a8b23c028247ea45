#!/usr/bin/env python3
"""Exports the model bench's ONNX files: real architectures as their own
libraries define them (torchvision, Hugging Face transformers), with random
weights from a fixed seed (no weights are downloaded), through torch.onnx.

usage: export_models.py OUT_DIR [NAME ...]
Writes OUT_DIR/NAME.onnx and OUT_DIR/NAME.input.npy (the input the bench
feeds every engine) for each name; a file already there is kept.
"""
import os
import sys

import numpy as np
import torch

MODELS = ["resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_large", "efficientnet_b0",
          "convnext_tiny", "vit_b_16", "bert_base"]


def vision(name):
    import torchvision
    model = getattr(torchvision.models, name)(weights=None)
    if name == "vit_b_16":  # torchvision starts ViT's classifier at zero: every output would be 0 and compare equal
        torch.nn.init.normal_(model.heads.head.weight, std=0.02)
    return model, (torch.randn(1, 3, 224, 224),), ["input"]


def bert():
    from transformers import BertConfig, BertModel
    cfg = BertConfig()  # bert-base: 12 layers, hidden 768, 12 heads
    class Encoder(torch.nn.Module):  # keyword arguments: BertModel's positional order changes between releases
        def __init__(self):
            super().__init__()
            self.bert = BertModel(cfg)

        def forward(self, input_ids, attention_mask):
            return self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    model = Encoder()
    seq = 128
    ids = torch.randint(0, cfg.vocab_size, (1, seq), dtype=torch.int64)
    mask = torch.ones(1, seq, dtype=torch.int64)
    return model, (ids, mask), ["input_ids", "attention_mask"]


def export(name, out_dir):
    path = os.path.join(out_dir, name + ".onnx")
    if os.path.exists(path):
        return
    torch.manual_seed(0)
    model, args, names = bert() if name == "bert_base" else vision(name)
    model.eval()
    torch.backends.mha.set_fastpath_enabled(False)  # the fused attention kernel has no ONNX form
    # ViT's attention takes a fused kernel with no ONNX form when gradients are off: export it with them on
    with torch.no_grad() if name != "vit_b_16" else torch.enable_grad():
        torch.onnx.export(model, args, path, input_names=names, output_names=["output"],
                          opset_version=17, dynamo=False)
    for n, a in zip(names, args):
        np.save(os.path.join(out_dir, f"{name}.{n}.npy"), a.numpy())
    print(f"exported {path}")


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    for name in sys.argv[2:] or MODELS:
        if name not in MODELS:
            sys.exit(f"export_models: unknown model {name} (one of {', '.join(MODELS)})")
        export(name, out_dir)


if __name__ == "__main__":
    main()
