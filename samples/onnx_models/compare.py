#!/usr/bin/env python3
"""Exports torchvision models to ONNX and checks clhost's outputs against ONNX Runtime.

For each model (ResNet-18, MobileNetV2, SqueezeNet 1.1 by default): random weights from a
fixed seed, export with torch.onnx.export at opset 13, one seeded random input saved as
.npy, ONNX Runtime (CPU) as the reference, then

    clhost run -m MODEL.onnx -i input=INPUT.npy -o OUTDIR -d DEVICE

and the largest absolute difference of every output. Exits 1 when any model fails to run
or differs by more than the tolerance (1e-3 absolute by default).

Needs torch, torchvision, onnx, onnxruntime and numpy. The .onnx files are written to
--work (not committed: ResNet-18 alone is 45 MB).
"""
import argparse
import os
import subprocess
import sys
import time

import numpy as np

MODELS = ("resnet18", "mobilenet_v2", "squeezenet1_1")


def export(name, path, opset, seed, batch):
    import torch
    import torchvision

    torch.manual_seed(seed)
    net = getattr(torchvision.models, name)(weights=None)
    # Fresh BatchNorm statistics are mean 0 and variance 1, which would make every
    # normalization an identity; random ones make the comparison mean something.
    for m in net.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.5, 1.5)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.1, 0.1)
    net.eval()
    x = torch.zeros(batch, 3, 224, 224)
    kwargs = dict(opset_version=opset, input_names=["input"], output_names=["output"],
                  dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
    with torch.no_grad():
        try:
            # The TorchScript exporter honours opset 13; newer torch defaults to the
            # dynamo exporter, which starts at opset 18.
            torch.onnx.export(net, x, path, dynamo=False, **kwargs)
        except TypeError:
            # torch before 2.5 has no dynamo argument and always uses TorchScript.
            torch.onnx.export(net, x, path, **kwargs)
        except Exception as err:  # a torch without the TorchScript exporter
            kwargs["opset_version"] = max(opset, 18)
            print(f"{name}: TorchScript export failed ({err}); using the dynamo exporter at opset "
                  f"{kwargs['opset_version']}", file=sys.stderr)
            torch.onnx.export(net, x, path, dynamo=True, **kwargs)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clhost", required=True, help="path to the clhost binary")
    ap.add_argument("--device", "-d", default="gpu", help="clhost device selector (cpu, gpu, an index or a name)")
    ap.add_argument("--work", default="onnx_work", help="folder for models, inputs and outputs")
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated torchvision model names")
    ap.add_argument("--opset", type=int, default=13)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tol", type=float, default=1e-3, help="largest allowed absolute difference")
    args = ap.parse_args()

    import onnxruntime as ort

    os.makedirs(args.work, exist_ok=True)
    failed = []
    rows = []
    for name in [m for m in args.models.split(",") if m]:
        d = os.path.join(args.work, name)
        os.makedirs(d, exist_ok=True)
        model_path = os.path.join(d, "model.onnx")
        input_path = os.path.join(d, "input.npy")
        out_dir = os.path.join(d, "clhost_out")
        os.makedirs(out_dir, exist_ok=True)

        export(name, model_path, args.opset, args.seed, args.batch)
        x = np.random.default_rng(args.seed).standard_normal((args.batch, 3, 224, 224)).astype(np.float32)
        np.save(input_path, x)

        sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
        in_name = sess.get_inputs()[0].name
        out_names = [o.name for o in sess.get_outputs()]
        refs = sess.run(None, {in_name: x})

        for n in out_names:
            stale = os.path.join(out_dir, n + ".npy")
            if os.path.exists(stale):
                os.remove(stale)
        cmd = [args.clhost, "run", "-m", model_path, "-i", f"{in_name}={input_path}", "-o", out_dir, "-d", args.device]
        if args.batch != 1:
            cmd += ["-batch", str(args.batch)]
        t0 = time.time()
        run = subprocess.run(cmd, capture_output=True, text=True)
        secs = time.time() - t0
        if run.returncode != 0:
            print(f"{name}: clhost failed (exit {run.returncode}): {' '.join(cmd)}\n{run.stdout}{run.stderr}", file=sys.stderr)
            failed.append(name)
            continue

        for n, ref in zip(out_names, refs):
            path = os.path.join(out_dir, n + ".npy")
            if not os.path.exists(path):
                print(f"{name}: clhost wrote no {path}", file=sys.stderr)
                failed.append(name)
                continue
            got = np.load(path)
            if got.shape != ref.shape:
                print(f"{name}: output {n} has shape {got.shape}, ONNX Runtime gives {ref.shape}", file=sys.stderr)
                failed.append(name)
                continue
            diff = float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64))))
            ok = diff <= args.tol
            rows.append((name, n, diff, float(np.max(np.abs(ref))), secs, "ok" if ok else "MISMATCH"))
            if not ok:
                failed.append(name)

    print(f"{'model':<16}{'output':<10}{'max |diff|':>12}{'max |ref|':>12}{'clhost s':>10}  result")
    for r in rows:
        print(f"{r[0]:<16}{r[1]:<10}{r[2]:>12.3e}{r[3]:>12.3e}{r[4]:>10.2f}  {r[5]}")
    print(f"device {args.device!r}, tolerance {args.tol:g} absolute")
    if failed:
        print("failed: " + ", ".join(sorted(set(failed))), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
