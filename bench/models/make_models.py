#!/usr/bin/env python3
"""Builds ResNet-18-, MobileNetV2- and SqueezeNet 1.1-shaped ONNX models with seeded random weights, with
onnx and numpy only (Debian's python3-onnx, python3-numpy), for benchmarking on machines
without PyTorch. The layer shapes follow torchvision's models, with BatchNormalization
already folded into the convolutions.

    python3 bench/models/make_models.py OUTDIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class Net:
    def __init__(self):
        self.nodes, self.inits, self.n = [], [], 0
        self.rng = np.random.default_rng(0)

    def name(self, p):
        self.n += 1
        return f"{p}{self.n}"

    def const(self, a):
        nm = self.name("w")
        self.inits.append(numpy_helper.from_array(a.astype(np.float32), nm))
        return nm

    def conv(self, x, cin, cout, k, s=1, group=1, relu=None, pad=None):
        w = self.rng.standard_normal((cout, cin // group, k, k)) * np.sqrt(2.0 / (cin // group * k * k))
        b = self.rng.standard_normal(cout) * 0.1
        y = self.name("conv")
        p = k // 2 if pad is None else pad
        self.nodes.append(helper.make_node("Conv", [x, self.const(w), self.const(b)], [y], strides=[s, s],
                                           pads=[p, p, p, p], group=group, kernel_shape=[k, k]))
        if relu == "relu":
            return self.op("Relu", [y])
        if relu == "relu6":
            z = self.name("clip")
            self.nodes.append(helper.make_node("Clip", [y, self.const(np.array(0.0)), self.const(np.array(6.0))], [z]))
            return z
        return y

    def op(self, typ, ins, **attrs):
        y = self.name(typ.lower())
        self.nodes.append(helper.make_node(typ, ins, [y], **attrs))
        return y

    def head(self, x, cin, classes=1000):
        g = self.op("GlobalAveragePool", [x])
        f = self.op("Flatten", [g], axis=1)
        w = self.rng.standard_normal((classes, cin)) * np.sqrt(1.0 / cin)
        return self.op("Gemm", [f, self.const(w), self.const(np.zeros(classes))], transB=1)

    def save(self, out, path):
        x = helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 3, 224, 224])
        y = helper.make_tensor_value_info(out, TensorProto.FLOAT, ["batch", 1000])
        g = helper.make_graph(self.nodes, "g", [x], [y], self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        onnx.save(m, path)


def resnet18(path):
    n = Net()
    x = n.conv("input", 3, 64, 7, 2, relu="relu")
    x = n.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for cout, s in [(64, 1), (128, 2), (256, 2), (512, 2)]:
        for b in range(2):
            st = s if b == 0 else 1
            y = n.conv(x, cin, cout, 3, st, relu="relu")
            y = n.conv(y, cout, cout, 3, 1)
            sc = n.conv(x, cin, cout, 1, st) if (st != 1 or cin != cout) else x
            x = n.op("Relu", [n.op("Add", [y, sc])])
            cin = cout
    n.save(n.head(x, 512), path)


def mobilenet_v2(path):
    n = Net()
    x = n.conv("input", 3, 32, 3, 2, relu="relu6")
    cin = 32
    for t, c, reps, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                          (6, 160, 3, 2), (6, 320, 1, 1)]:
        for i in range(reps):
            st = s if i == 0 else 1
            hid = cin * t
            y = n.conv(x, cin, hid, 1, relu="relu6") if t != 1 else x
            y = n.conv(y, hid, hid, 3, st, group=hid, relu="relu6")
            y = n.conv(y, hid, c, 1)
            x = n.op("Add", [x, y]) if st == 1 and cin == c else y
            cin = c
    x = n.conv(x, cin, 1280, 1, relu="relu6")
    n.save(n.head(x, 1280), path)


def squeezenet1_1(path):
    """torchvision's squeezenet1_1: an unpadded stride-2 stem, ceil-mode max pools, fire
    modules (a 1x1 squeeze, then 1x1 and 3x3 expands joined by Concat) and a 1x1
    classifier conv averaged over the plane instead of a Gemm."""
    n = Net()

    def fire(x, cin, sq, e1, e3):
        s = n.conv(x, cin, sq, 1, relu="relu")
        return n.op("Concat", [n.conv(s, sq, e1, 1, relu="relu"), n.conv(s, sq, e3, 3, relu="relu")], axis=1)

    def pool(x):
        return n.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)

    x = pool(n.conv("input", 3, 64, 3, 2, relu="relu", pad=0))
    x = fire(fire(x, 64, 16, 64, 64), 128, 16, 64, 64)
    x = pool(x)
    x = fire(fire(x, 128, 32, 128, 128), 256, 32, 128, 128)
    x = pool(x)
    for cin, sq, e in [(256, 48, 192), (384, 48, 192), (384, 64, 256), (512, 64, 256)]:
        x = fire(x, cin, sq, e, e)
    x = n.conv(x, 512, 1000, 1, relu="relu")
    n.save(n.op("Flatten", [n.op("GlobalAveragePool", [x])], axis=1), path)


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    resnet18(os.path.join(out, "resnet18.onnx"))
    mobilenet_v2(os.path.join(out, "mobilenet_v2.onnx"))
    squeezenet1_1(os.path.join(out, "squeezenet1_1.onnx"))
    print("wrote", out)
