#!/usr/bin/env python3
"""Exports the real networks of the model suite (the three classifiers, segmentation, MobileNetV3, a vision
transformer, a TransformerEncoder, ShuffleNetV2's channel shuffles, ConvNeXt's
channels-last LayerNorm and 7×7 depthwise blocks) to ONNX with seeded random weights,
and writes for each model and batch an input, the fp32 reference output for it (ONNX
Runtime's; PyTorch's on the CPU where ONNX Runtime is not installed), and the p50 times of
ONNX Runtime (CPU) and PyTorch eager (CUDA when there is a GPU) in one JSON line.

    python3 bench/models/real_models.py OUTDIR [--batch 1 8] [--only NAME ...]

writes OUTDIR/NAME_bB.onnx, NAME_bB.in.npy, NAME_bB.ref.npy and OUTDIR/peers.jsonl.
"""
import argparse
import inspect
import json
import os
import time

import numpy as np
import torch
import torchvision


class Encoder(torch.nn.Module):
    """torch.nn.TransformerEncoder over a sequence of 128 tokens of width 256."""

    def __init__(self):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=8, dim_feedforward=1024, batch_first=True)
        self.enc = torch.nn.TransformerEncoder(layer, num_layers=4, enable_nested_tensor=False)

    def forward(self, x):
        return self.enc(x)


def seg(ctor):
    m = ctor(weights=None, weights_backbone=None)

    class Out(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = m

        def forward(self, x):
            return self.m(x)["out"]

    return Out()


MODELS = {
    "resnet18": (lambda: torchvision.models.resnet18(weights=None), (3, 224, 224)),
    "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(weights=None), (3, 224, 224)),
    "squeezenet1_1": (lambda: torchvision.models.squeezenet1_1(weights=None), (3, 224, 224)),
    "lraspp_mobilenet_v3_large": (lambda: seg(torchvision.models.segmentation.lraspp_mobilenet_v3_large), (3, 224, 224)),
    "deeplabv3_mobilenet_v3_large": (lambda: seg(torchvision.models.segmentation.deeplabv3_mobilenet_v3_large), (3, 224, 224)),
    "mobilenet_v3_large": (lambda: torchvision.models.mobilenet_v3_large(weights=None), (3, 224, 224)),
    "vit_b_16": (lambda: torchvision.models.vit_b_16(weights=None), (3, 224, 224)),
    "transformer_encoder": (Encoder, (128, 256)),
    "shufflenet_v2_x1_0": (lambda: torchvision.models.shufflenet_v2_x1_0(weights=None), (3, 224, 224)),
    "convnext_tiny": (lambda: torchvision.models.convnext_tiny(weights=None), (3, 224, 224)),
}


def nonzero_weights(model):
    """Gives every all-zero weight (two or more dimensions) seeded normal values: torchvision's
    ViT starts its classifier head and class token at zero, which makes its output all zeros
    and any comparison with it vacuous."""
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2 and not p.any():
                p.normal_(0, 0.02)


def calibrate(model, x):
    """Sets every BatchNorm's running statistics to those of x, so that activations keep a
    unit scale through the network (random weights with the default statistics shrink a deep
    network's output towards zero, where any comparison is weak)."""
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    for m in bns:
        m.reset_running_stats()
        m.momentum = None
    model.train()
    with torch.no_grad():
        model(x)
    model.eval()


def export(model, x, path, opset):
    kwargs = dict(input_names=["input"], output_names=["output"], opset_version=opset, do_constant_folding=True)
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kwargs["dynamo"] = False
    torch.onnx.export(model, x, path, **kwargs)


def p50(fn, n):
    fn()
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts)) * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--opset", type=int, default=17)
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    try:
        import onnxruntime as ort
    except ImportError:
        ort = None

    # The exporter cannot write the fused attention kernel PyTorch's fast path calls in eval
    # mode; with it off, attention is exported as MatMul, Softmax and friends.
    if hasattr(torch.backends, "mha"):
        torch.backends.mha.set_fastpath_enabled(False)

    os.makedirs(args.out, exist_ok=True)
    cuda = torch.cuda.is_available()
    peers = open(os.path.join(args.out, "peers.jsonl"), "a")
    for name, (ctor, shape) in MODELS.items():
        if args.only and name not in args.only:
            continue
        torch.manual_seed(0)
        model = ctor().eval()
        nonzero_weights(model)
        calibrate(model, torch.randn(4, *shape))
        for b in args.batch:
            stem = os.path.join(args.out, f"{name}_b{b}")
            x = torch.randn(b, *shape)
            # Traced with gradients on: PyTorch releases without the switch above take
            # the fast path only under no_grad.
            export(model, x, stem + ".onnx", args.opset)
            xn = x.numpy()
            np.save(stem + ".in.npy", xn)
            if ort is not None:
                sess = ort.InferenceSession(stem + ".onnx", providers=["CPUExecutionProvider"])
                y = sess.run(None, {"input": xn})[0]
                rec = {"model": name, "batch": b, "reference": "onnxruntime",
                       "ort_cpu_ms": p50(lambda: sess.run(None, {"input": xn}), args.runs)}
            else:
                with torch.no_grad():
                    y = model(x).numpy()
                rec = {"model": name, "batch": b, "reference": "torch-cpu"}
            np.save(stem + ".ref.npy", y)
            if cuda:
                g = model.cuda()
                with torch.no_grad():
                    def eager():
                        out = g(torch.from_numpy(xn).cuda())
                        out.cpu()
                    rec["torch_eager_gpu_ms"] = p50(eager, args.runs)
                    yt = g(torch.from_numpy(xn).cuda()).cpu().numpy()
                rec["torch_vs_ort_max_abs"] = float(np.abs(yt - y).max())
                model = g.cpu()
            peers.write(json.dumps(rec) + "\n")
            peers.flush()
            print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()
