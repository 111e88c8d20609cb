#!/usr/bin/env python3
"""Exports torchvision's ResNet-18, MobileNetV2 and SqueezeNet 1.1 to ONNX at fixed batch
sizes, for bench/first-run.sh. The weights are seeded random ones (no download: the
benchmark machines may reach no network); the layer shapes, and so the programs clhost
compiles and the time it takes, are torchvision's. Needs torch and torchvision.

    python3 bench/models/export_torchvision.py OUTDIR [--batch 1 16] [--opset 13]

writes OUTDIR/resnet18_b1.onnx, OUTDIR/resnet18_b16.onnx, mobilenet_v2_b1.onnx, ...
"""
import argparse
import inspect
import os

import torch
import torchvision

MODELS = {
    "resnet18": torchvision.models.resnet18,
    "mobilenet_v2": torchvision.models.mobilenet_v2,
    "squeezenet1_1": torchvision.models.squeezenet1_1,
}


def build(ctor):
    try:
        return ctor(weights=None)
    except TypeError:  # torchvision before 0.13
        return ctor(pretrained=False)


def export(model, x, path, opset):
    kwargs = dict(input_names=["input"], output_names=["output"], opset_version=opset, do_constant_folding=True)
    # The TorchScript exporter writes one file with every weight inside; newer torch
    # defaults to another exporter.
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kwargs["dynamo"] = False
    torch.onnx.export(model, x, path, **kwargs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 16])
    ap.add_argument("--opset", type=int, default=13)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)
    for name, ctor in MODELS.items():
        model = build(ctor).eval()
        for b in args.batch:
            path = os.path.join(args.out, f"{name}_b{b}.onnx")
            with torch.no_grad():
                export(model, torch.randn(b, 3, 224, 224), path, args.opset)
            print("wrote", path)


if __name__ == "__main__":
    main()
