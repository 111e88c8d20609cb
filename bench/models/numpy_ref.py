#!/usr/bin/env python3
"""Runs an ONNX model in numpy (float64) for the ops of the real-model suite, as a reference
independent of clhost where ONNX Runtime is not installed; optionally replaces initializers
that are all zeros (torchvision's ViT classifier head starts at zero, which makes the output
all zeros and any comparison vacuous) with seeded random values first.

    python3 bench/models/numpy_ref.py MODEL.onnx IN.npy OUT.npy [--fill-zero-weights NEW.onnx]

With --fill-zero-weights, NEW.onnx is the model with those initializers filled, and OUT.npy
is its output; run clhost on NEW.onnx to compare.
"""
import argparse
import math

import numpy as np
import onnx
from onnx import numpy_helper


def attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def conv(x, w, b, a):
    """NCHW convolution, group 1, with pads, strides and dilations."""
    kh, kw = w.shape[2:]
    sh, sw = a.get("strides", [1, 1])
    dh, dw = a.get("dilations", [1, 1])
    p = a.get("pads", [0, 0, 0, 0])
    if a.get("group", 1) != 1:
        raise NotImplementedError("grouped Conv")
    x = np.pad(x, ((0, 0), (0, 0), (p[0], p[2]), (p[1], p[3])))
    oh = (x.shape[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (x.shape[3] - dw * (kw - 1) - 1) // sw + 1
    y = np.zeros((x.shape[0], w.shape[0], oh, ow))
    for u in range(kh):
        for v in range(kw):
            patch = x[:, :, u * dh: u * dh + sh * (oh - 1) + 1: sh, v * dw: v * dw + sw * (ow - 1) + 1: sw]
            y += np.einsum("nchw,mc->nmhw", patch, w[:, :, u, v])
    if b is not None:
        y += b.reshape(1, -1, 1, 1)
    return y


def run_node(n, v):
    a = attrs(n)
    x = [v[i] if i else None for i in n.input]
    op = n.op_type
    if op == "Constant":
        return [numpy_helper.to_array(a["value"]).astype(np.float64) if a["value"].data_type in (1, 10, 11) else numpy_helper.to_array(a["value"])]
    if op in ("Identity", "Dropout"):
        return [x[0]]
    if op in ("Add", "Sub", "Mul", "Div", "Pow", "Equal", "Less", "Greater"):
        f = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Pow": np.power, "Equal": np.equal,
             "Less": np.less, "Greater": np.greater}
        if op == "Div":
            if x[0].dtype.kind == "i" and x[1].dtype.kind == "i":
                return [np.trunc(x[0] / x[1]).astype(x[0].dtype)]
            return [x[0] / x[1]]
        return [f[op](x[0], x[1])]
    if op == "Mod":
        return [np.fmod(x[0], x[1]) if a.get("fmod", 0) else np.mod(x[0], x[1])]
    if op == "Where":
        return [np.where(x[0], x[1], x[2])]
    if op == "Sqrt":
        return [np.sqrt(x[0])]
    if op == "Relu":
        return [np.maximum(x[0], 0)]
    if op == "Sigmoid":
        return [1 / (1 + np.exp(-x[0]))]
    if op == "Erf":
        return [np.vectorize(math.erf)(x[0])]
    if op == "Cast":
        to = a["to"]
        if to in (1, 10, 11):
            return [x[0].astype(np.float64)]
        return [x[0].astype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[to])]
    if op == "Shape":
        return [np.array(x[0].shape, dtype=np.int64)[a.get("start", 0): a.get("end", None)]]
    if op == "Reshape":
        s = [x[0].shape[i] if d == 0 and not a.get("allowzero", 0) else d for i, d in enumerate(x[1])]
        return [x[0].reshape(s)]
    if op == "Transpose":
        return [np.transpose(x[0], a.get("perm"))]
    if op == "Unsqueeze":
        r = x[0]
        axes = sorted(int(k) % (r.ndim + len(x[1])) for k in x[1])
        for k in axes:
            r = np.expand_dims(r, k)
        return [r]
    if op == "Squeeze":
        return [np.squeeze(x[0], tuple(int(k) for k in x[1]) if len(x) > 1 else None)]
    if op == "Concat":
        return [np.concatenate(x, axis=a["axis"])]
    if op == "Gather":
        return [np.take(x[0], x[1], axis=a.get("axis", 0))]
    if op == "Slice":
        axes = x[3] if len(x) > 3 and x[3] is not None else range(len(x[1]))
        steps = x[4] if len(x) > 4 and x[4] is not None else [1] * len(x[1])
        sl = [slice(None)] * x[0].ndim
        for s, e, ax, st in zip(x[1], x[2], axes, steps):
            sl[int(ax)] = slice(int(s), int(min(max(e, -2**62), 2**62)), int(st))
        return [x[0][tuple(sl)]]
    if op == "Expand":
        return [x[0] * np.ones(tuple(int(d) for d in x[1]), dtype=x[0].dtype)]
    if op == "ConstantOfShape":
        val = numpy_helper.to_array(a["value"]) if "value" in a else np.zeros(1)
        return [np.full(tuple(int(d) for d in x[0]), val.reshape(-1)[0], dtype=val.dtype)]
    if op == "MatMul":
        return [np.matmul(x[0], x[1])]
    if op == "Gemm":
        A = x[0].T if a.get("transA", 0) else x[0]
        B = x[1].T if a.get("transB", 0) else x[1]
        y = a.get("alpha", 1.0) * A @ B
        if len(x) > 2 and x[2] is not None:
            y = y + a.get("beta", 1.0) * x[2]
        return [y]
    if op == "Softmax":
        ax = a.get("axis", -1)
        e = np.exp(x[0] - x[0].max(axis=ax, keepdims=True))
        return [e / e.sum(axis=ax, keepdims=True)]
    if op == "LayerNormalization":
        ax = a.get("axis", -1) % x[0].ndim
        axes = tuple(range(ax, x[0].ndim))
        m = x[0].mean(axis=axes, keepdims=True)
        var = ((x[0] - m) ** 2).mean(axis=axes, keepdims=True)
        y = (x[0] - m) / np.sqrt(var + a.get("epsilon", 1e-5)) * x[1]
        if len(x) > 2 and x[2] is not None:
            y = y + x[2]
        return [y]
    if op == "Conv":
        return [conv(x[0], x[1], x[2] if len(x) > 2 else None, a)]
    raise NotImplementedError(op)


def run(model, inp):
    g = model.graph
    v = {}
    for t in g.initializer:
        arr = numpy_helper.to_array(t)
        v[t.name] = arr.astype(np.float64) if arr.dtype.kind == "f" else arr
    v[g.input[0].name] = inp.astype(np.float64)
    for n in g.node:
        for name, val in zip(n.output, run_node(n, v)):
            v[name] = val
    return v[g.output[0].name]


def fill_zero_weights(model, seed=0):
    rng = np.random.default_rng(seed)
    for t in model.graph.initializer:
        a = numpy_helper.to_array(t)
        if a.dtype == np.float32 and a.size > 1 and not a.any():
            t.CopyFrom(numpy_helper.from_array((rng.standard_normal(a.shape) * 0.05).astype(np.float32), t.name))
            print(f"filled {t.name} {a.shape}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--fill-zero-weights", metavar="NEW_ONNX")
    args = ap.parse_args()
    m = onnx.load(args.model)
    if args.fill_zero_weights:
        fill_zero_weights(m)
        onnx.save(m, args.fill_zero_weights)
    y = run(m, np.load(args.input))
    np.save(args.output, y.astype(np.float32))
    print(f"output {y.shape} max |y| {np.abs(y).max():.4g}")


if __name__ == "__main__":
    main()
