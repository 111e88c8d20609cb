#!/usr/bin/env python3
"""Peer comparison: clhost against ONNX Runtime (CPU) and PyTorch (CPU and CUDA, TF32 off).

Exports the models with random weights (seeded), runs every engine on the same inputs in
one run, checks that the outputs agree with ONNX Runtime, and prints a table of latencies
and ratios (peer time / clhost time: above 1 means clhost is faster).

Needs: torch, torchvision, onnx, onnxruntime, numpy, and a built clhost binary.

    python3 bench/peers/peers.py --clhost bin/clhost --out /tmp/peers [--models resnet18,...]
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np


def export_models(names, out):
    import torch
    import torchvision

    paths = {}
    for name in names:
        path = os.path.join(out, name + ".onnx")
        paths[name] = path
        if os.path.exists(path):
            continue
        torch.manual_seed(0)
        if name == "convpool":
            m = torch.nn.Sequential(torch.nn.Conv2d(3, 10, 4, stride=4, bias=True), torch.nn.MaxPool2d(2, 2))
            shape = (1, 3, 416, 416)
        else:
            m = getattr(torchvision.models, name)(weights=None)
            shape = (1, 3, 224, 224)
        m.eval()
        x = torch.randn(*shape)
        torch.onnx.export(m, x, path, opset_version=13, input_names=["input"], output_names=["output"],
                          dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}}, dynamo=False)
    return paths


def input_shape(name, batch):
    return (batch, 3, 416, 416) if name == "convpool" else (batch, 3, 224, 224)


def timeit(fn, warmup, n):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    times.sort()
    return 1e3 * times[len(times) // 2], 1e3 * sum(times) / len(times), 1e3 * times[0]


def run_ort(path, x, threads, warmup, n, out_dir):
    """Times ONNX Runtime in a process of its own, as clhost runs in its own: nothing of
    its session (thread pool, arenas) stays in this one between rounds, where clhost's
    later rounds would share the machine with it."""
    xin = os.path.join(out_dir, "ort_x.npy")
    xout = os.path.join(out_dir, "ort_out.npy")
    np.save(xin, x)
    r = subprocess.run([sys.executable, os.path.abspath(__file__), "--ort-worker", path, xin, xout,
                        str(threads), str(warmup), str(n)], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("ONNX Runtime failed: " + r.stderr[-3000:])
    t = json.loads(r.stdout)
    return (t["p50_ms"], t["mean_ms"], t["min_ms"]), np.load(xout)


def ort_worker(path, xin, xout, threads, warmup, n):
    import onnxruntime as ort

    x = np.load(xin)
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    np.save(xout, s.run(None, {"input": x})[0])
    p50, mean, fastest = timeit(lambda: s.run(None, {"input": x}), warmup, n)
    print(json.dumps({"p50_ms": p50, "mean_ms": mean, "min_ms": fastest}))


def torch_model(name):
    import torch
    import torchvision

    torch.manual_seed(0)
    if name == "convpool":
        m = torch.nn.Sequential(torch.nn.Conv2d(3, 10, 4, stride=4, bias=True), torch.nn.MaxPool2d(2, 2))
    else:
        m = getattr(torchvision.models, name)(weights=None)
    return m.eval()


def run_torch(name, x, device, threads, warmup, n):
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_num_threads(threads)
    m = torch_model(name).to(device)
    xt = torch.from_numpy(x)

    def step():
        with torch.inference_mode():
            # Input from host memory and output back to it, as a user sees it.
            y = m(xt.to(device))
            return y.cpu()

    out = step().numpy()
    return timeit(step, warmup, n), out


def run_clhost(clhost, path, batch, device, x, out_dir, n, warmup, flags=()):
    xin = os.path.join(out_dir, "x_%d.npy" % batch)
    np.save(xin, x)
    od = os.path.join(out_dir, "clhost_out_%s_%d" % (device, batch))
    r = subprocess.run([clhost, "run", "-m", path, "--batch", str(batch), "-d", device, "-i", "input=" + xin, "-o", od] + list(flags),
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("clhost run failed: " + r.stderr[-3000:])
    out = np.load(os.path.join(od, "output.npy"))
    res = bench_clhost(clhost, path, batch, device, n, warmup, flags)
    return out, res


def bench_clhost(clhost, path, batch, device, n, warmup, flags=()):
    r = subprocess.run([clhost, "bench", "-m", path, "--batch", str(batch), "-d", device, "-n", str(n),
                        "--warmup", str(warmup), "--json"] + list(flags), capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("clhost bench failed: " + r.stderr[-3000:])
    return json.loads(r.stdout)


def main():
    if len(sys.argv) == 8 and sys.argv[1] == "--ort-worker":
        path, xin, xout = sys.argv[2:5]
        ort_worker(path, xin, xout, *(int(v) for v in sys.argv[5:8]))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--clhost", default="bin/clhost")
    ap.add_argument("--out", default="/tmp/clhost-peers")
    ap.add_argument("--models", default="resnet18,mobilenet_v2,squeezenet1_1,convpool")
    ap.add_argument("--batches", default="1,16")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--engines", default="gpu,cpu", help="clhost devices to measure: gpu, cpu")
    ap.add_argument("--json", default="", help="also write the rows here")
    ap.add_argument("--rounds", type=int, default=1,
                    help="time clhost and ONNX Runtime this many times, alternately, and report each one's median "
                         "(on a machine whose speed drifts, a single pair of runs can land in different phases)")
    ap.add_argument("--clhost-flag", action="append", default=[],
                    help="extra flag for clhost run and bench (repeatable), e.g. --clhost-flag=--tune=false")
    ap.add_argument("--clhost-cpu-flag", action="append", default=[],
                    help="extra flag for the CPU runs only (repeatable)")
    ap.add_argument("--busy-cores", type=int, default=0,
                    help="keep this many cores busy, one spinning process each, while every engine runs: "
                         "another tenant's load, to see how each engine bears it")
    a = ap.parse_args()
    spinners = start_spinners(a.busy_cores)
    try:
        run(a)
    finally:
        for p in spinners:
            p.kill()


def start_spinners(count):
    """Starts count processes that each spin on one core of this process's affinity set,
    the last ones."""
    cores = sorted(os.sched_getaffinity(0))[-count:] if count > 0 else []
    return [subprocess.Popen([sys.executable, "-c", "import os\nos.sched_setaffinity(0, {%d})\nwhile True:\n    pass" % c])
            for c in cores]


def run(a):
    os.makedirs(a.out, exist_ok=True)
    names = a.models.split(",")
    paths = export_models(names, a.out)
    import torch

    has_cuda = torch.cuda.is_available()
    rows = []
    ok = True
    for name in names:
        for batch in [int(b) for b in a.batches.split(",")]:
            rng = np.random.default_rng(batch)
            x = rng.standard_normal(input_shape(name, batch), dtype=np.float32)
            # clhost and ONNX Runtime alternate, each in processes of its own, so that
            # neither's threads (ONNX Runtime's spin between runs) outlive its turn;
            # PyTorch runs in this process after both. clhost's outputs are compared with
            # ONNX Runtime's.
            row = {"model": name, "batch": batch}
            outs = {}
            times = {}
            ort_times = []
            # Each engine's fastest inference over all rounds too: on a shared machine it
            # is the least disturbed by other tenants, where medians move with them.
            minima = {}
            ort_minima = []
            for rnd in range(max(a.rounds, 1)):
                for dev in a.engines.split(","):
                    if rnd > 0 and dev not in outs:
                        continue  # it failed in the first round
                    flags = a.clhost_flag + (a.clhost_cpu_flag if dev == "cpu" else [])
                    try:
                        if rnd == 0:
                            out, res = run_clhost(a.clhost, paths[name], batch, dev, x, a.out, a.n, a.warmup, flags)
                            outs[dev] = out
                            row["clhost_%s_layers" % dev] = res.get("layers", [])
                        else:
                            res = bench_clhost(a.clhost, paths[name], batch, dev, a.n, a.warmup, flags)
                    except RuntimeError as e:
                        print("%s batch %d on %s: %s" % (name, batch, dev, e), file=sys.stderr)
                        ok = False
                        outs.pop(dev, None)
                        continue
                    times.setdefault(dev, []).append(res["p50_ms"])
                    minima.setdefault(dev, []).append(res["min_ms"])
                (ort_p50, _, ort_min), ref = run_ort(paths[name], x, a.threads, a.warmup, a.n, a.out)
                ort_times.append(ort_p50)
                ort_minima.append(ort_min)
            for dev in outs:
                row["clhost_%s_ms" % dev] = float(np.median(times[dev]))
                row["clhost_%s_rounds_ms" % dev] = times[dev]
                row["clhost_%s_min_ms" % dev] = float(min(minima[dev]))
            row["ort_cpu_ms"] = float(np.median(ort_times))
            row["ort_cpu_rounds_ms"] = ort_times
            row["ort_cpu_min_ms"] = float(min(ort_minima))
            for dev, out in outs.items():
                diff = float(np.abs(out - ref).max())
                row["clhost_%s_maxabs" % dev] = diff
                if diff > 1e-3:
                    ok = False
            (tc, _, _), tc_out = run_torch(name, x, "cpu", a.threads, min(a.warmup, 3), max(5, a.n // 5))
            row["torch_cpu_ms"] = tc
            if has_cuda:
                (tg, _, _), tg_out = run_torch(name, x, "cuda", a.threads, a.warmup, a.n)
                row["torch_cuda_ms"] = tg
                row["torch_cuda_vs_ort"] = float(np.abs(tg_out - ref).max())
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if not k.endswith("_layers")}), flush=True)
    print()
    print("| model | batch | clhost GPU ms | PyTorch CUDA ms | ratio | clhost CPU ms | ORT CPU ms | ratio | ratio of minima (CPU) | PyTorch CPU ms | max abs diff (GPU / CPU) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        g, c = r.get("clhost_gpu_ms"), r.get("clhost_cpu_ms")
        tg = r.get("torch_cuda_ms")
        f = lambda v: "%.3f" % v if v is not None else "-"
        ratio = lambda peer, mine: "%.2f×" % (peer / mine) if peer and mine else "-"
        print("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s |" % (
            r["model"], r["batch"], f(g), f(tg), ratio(tg, g), f(c), f(r["ort_cpu_ms"]), ratio(r["ort_cpu_ms"], c),
            ratio(r["ort_cpu_min_ms"], r.get("clhost_cpu_min_ms")), f(r["torch_cpu_ms"]), ("%.1e" % r["clhost_gpu_maxabs"]) if "clhost_gpu_maxabs" in r else "-",
            ("%.1e" % r["clhost_cpu_maxabs"]) if "clhost_cpu_maxabs" in r else "-"))
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    if not ok:
        print("some clhost outputs differ from ONNX Runtime by more than 1e-3, or a run failed", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
