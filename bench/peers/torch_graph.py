#!/usr/bin/env python3
"""The strongest GPU peer: PyTorch with the whole model captured in one CUDA graph, timed
host memory to host memory as clhost is, beside `clhost bench` of the same model, batch
and precision in the same run.

    python3 bench/peers/torch_graph.py --clhost bin/clhost --model resnet18 --batch 16 \
        --precision fp32|tf32|fp16 [--n 200] [--device gpu:0]

PyTorch runs with cuDNN's benchmark mode; TF32 off for fp32, on for tf32; fp16 runs the
model in half with channels_last tensors (the input converted on the device, inside the
graph). One replay per inference: the pinned host input is copied in, the graph
replayed, the output copied back to pinned host memory and waited for. Without CUDA
(a machine with no GPU) it times PyTorch eager on the CPU instead, so that the script
can be tried anywhere; the line says which. Prints one JSON line.
"""
import argparse
import json
import os
import subprocess
import tempfile
import time

import numpy as np
import torch
import torchvision


def torch_p50(model_name, batch, precision, n, warmup):
    torch.manual_seed(0)
    m = getattr(torchvision.models, model_name)(weights=None).eval()
    x = torch.randn(batch, 3, 224, 224)
    if not torch.cuda.is_available():
        with torch.inference_mode():
            ts = []
            for i in range(warmup + n):
                t = time.perf_counter()
                m(x)
                ts.append(time.perf_counter() - t)
        return float(np.median(ts[warmup:])) * 1e3, "torch eager cpu (no CUDA)"
    torch.backends.cudnn.benchmark = True
    tf32 = precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    dev = torch.device("cuda")
    m = m.to(dev)
    dtype = torch.float32
    if precision == "fp16":
        m = m.half().to(memory_format=torch.channels_last)
        dtype = torch.float16
    host_in = x.pin_memory()
    static_in = torch.empty_like(x, device=dev)
    with torch.inference_mode():
        def forward():
            y = static_in.to(dtype)
            if precision == "fp16":
                y = y.contiguous(memory_format=torch.channels_last)
            return m(y).float()

        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                forward()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            static_out = forward()
        host_out = torch.empty(static_out.shape, dtype=torch.float32).pin_memory()
        ts = []
        for i in range(warmup + n):
            t = time.perf_counter()
            static_in.copy_(host_in, non_blocking=True)
            g.replay()
            host_out.copy_(static_out, non_blocking=True)
            torch.cuda.synchronize()
            ts.append(time.perf_counter() - t)
    return float(np.median(ts[warmup:])) * 1e3, "torch cuda graph"


def export(model_name, path):
    torch.manual_seed(0)
    m = getattr(torchvision.models, model_name)(weights=None).eval()
    x = torch.randn(1, 3, 224, 224)
    torch.onnx.export(m, x, path, input_names=["input"], output_names=["output"], opset_version=17,
                      dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})


def clhost_bench(clhost, path, batch, precision, device, n, warmup):
    r = subprocess.run([clhost, "bench", "-m", path, "--batch", str(batch), "-d", device, "-n", str(n),
                        "--warmup", str(warmup), "--precision", precision, "--json", "--layers=false"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("clhost bench failed: " + r.stderr[-3000:])
    return json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clhost", default="bin/clhost")
    ap.add_argument("--model", default="resnet18")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--precision", default="fp32", choices=["fp32", "tf32", "fp16"])
    ap.add_argument("--device", default="gpu:0")
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--out", default=tempfile.gettempdir())
    a = ap.parse_args()
    path = os.path.join(a.out, a.model + "_dyn.onnx")
    if not os.path.exists(path):
        export(a.model, path)
    # Alternate the two engines twice so that neither has the machine to itself.
    rows = []
    for _ in range(2):
        c = clhost_bench(a.clhost, path, a.batch, a.precision, a.device, a.n, a.warmup)
        t, peer = torch_p50(a.model, a.batch, a.precision, a.n, a.warmup)
        rows.append((c["p50_ms"], t))
    c_ms = float(np.median([r[0] for r in rows]))
    t_ms = float(np.median([r[1] for r in rows]))
    print(json.dumps({"model": a.model, "batch": a.batch, "precision": a.precision, "clhost_p50_ms": c_ms,
                      "peer": peer, "peer_p50_ms": t_ms, "ratio_peer_over_clhost": t_ms / c_ms,
                      "clhost_precision": c.get("precision"), "device": c.get("device")}))


if __name__ == "__main__":
    main()
