#!/usr/bin/env python3
"""Writes the sample's ONNX model and its data: Conv -> HardSwishX (a custom op) -> MaxPool.

Needs the onnx and numpy modules (Debian: apt-get install python3-onnx python3-numpy).
The files it writes are committed, so the sample and its test need no Python:

  model.onnx      the model; HardSwishX is an op of the domain "sample.custom"
  input.npy       an input of the model's shape
  c1_ref.npy      numpy's value of c1, the convolution's output (hs1's input)
  h1_ref.npy      numpy's value of h1, hs1's output, for input.npy (conv, then hard swish)
  y_ref.npy       numpy's value of the graph output y (h1_ref max-pooled)

Run from this folder: python3 make_model.py
"""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(42)
N, C, H, W, M = 1, 3, 24, 32, 8
x = rng.standard_normal((N, C, H, W)).astype(np.float32)
w = (rng.standard_normal((M, C, 3, 3)) * 0.5).astype(np.float32)
b = (rng.standard_normal(M) * 0.1).astype(np.float32)
alpha, beta = 1.0 / 6.0, 0.5

nodes = [
    helper.make_node("Conv", ["x", "w", "b"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    # op_type picks the CustomLayer name; the domain marks it as not an ONNX operator;
    # the attributes become the layer's parameters (float here).
    helper.make_node("HardSwishX", ["c1"], ["h1"], name="hs1", domain="sample.custom", alpha=alpha, beta=beta),
    helper.make_node("MaxPool", ["h1"], ["y"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
]
graph = helper.make_graph(
    nodes,
    "conv_hardswish_pool",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [N, C, H, W])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [N, M, H // 2, W // 2])],
    initializer=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    # A custom op's output shape cannot be inferred: it must be declared.
    value_info=[helper.make_tensor_value_info("h1", TensorProto.FLOAT, [N, M, H, W])],
)
model = helper.make_model(
    graph,
    opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("sample.custom", 1)],
    producer_name="clhost samples/onnx_custom_op",
)
onnx.save(model, "model.onnx")

# The references, in plain numpy.
xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
conv = np.zeros((N, M, H, W), np.float64)
for ky in range(3):
    for kx in range(3):
        patch = xp[:, :, ky:ky + H, kx:kx + W].astype(np.float64)
        conv += np.einsum("nchw,mc->nmhw", patch, w[:, :, ky, kx].astype(np.float64))
conv += b.reshape(1, M, 1, 1)
hs = conv * np.clip(alpha * conv + beta, 0.0, 1.0)
y = hs.reshape(N, M, H // 2, 2, W // 2, 2).max(axis=(3, 5))

np.save("input.npy", x)
np.save("c1_ref.npy", conv.astype(np.float32))
np.save("h1_ref.npy", hs.astype(np.float32))
np.save("y_ref.npy", y.astype(np.float32))
print("wrote model.onnx, input.npy, c1_ref.npy, h1_ref.npy, y_ref.npy")
