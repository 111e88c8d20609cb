#!/usr/bin/env python3
"""Writes the sample's ONNX model, a YOLO-style detector head with a custom decode layer, and
its data. Needs the onnx and numpy modules (Debian: apt-get install python3-onnx
python3-numpy); the files it writes are committed, so the sample and its test need no Python:

  model.onnx       the head: inputs p4 (1x16x8x8, stride 16) and p5 (1x32x4x4, stride 32) of a
                   128x128 image; outputs boxes (1x240x4, centre x, y, width, height in pixels)
                   and scores (1x240x4, class probability times objectness)
  p4.npy, p5.npy   an input of the model's shapes
  boxes_ref.npy,   numpy's values of the two outputs for those inputs, computed in float64
  scores_ref.npy   from the formulas below, not by running the model

Per level, a 1x1 convolution predicts 3 anchors x (4 box + 1 objectness + 4 classes) = 27
channels; Sigmoid; YoloDecode (the custom op, domain sample.custom) turns the box channels
into pixels with the level's stride and anchors, YOLOv5's rule:
  x = (2s - 0.5 + column) * stride, y = (2s - 0.5 + row) * stride,
  w = (2s)^2 * anchor_w, h = (2s)^2 * anchor_h, other channels unchanged;
then Reshape, Transpose and Reshape to one row of 9 values per anchor and cell, Concat of
both levels, and Slice into boxes, objectness and classes. The stride-16 level also sees
the stride-32 features: 1x1 convolution, nearest Resize x2, Concat with p4.

Run from this folder: python3 make_model.py
"""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(7)
NA, NC = 3, 4
PER = 5 + NC
LEVELS = [  # name, channels, size, stride, anchors (w, h pairs in pixels)
    ("p4", 16, 8, 16.0, [10.0, 13.0, 16.0, 30.0, 33.0, 23.0]),
    ("p5", 32, 4, 32.0, [30.0, 61.0, 62.0, 45.0, 59.0, 119.0]),
]
LAT = 16  # channels of the lateral 1x1 convolution of p5

p4 = rng.standard_normal((1, 16, 8, 8)).astype(np.float32)
p5 = rng.standard_normal((1, 32, 4, 4)).astype(np.float32)
w_lat = (rng.standard_normal((LAT, 32, 1, 1)) * 0.3).astype(np.float32)
b_lat = (rng.standard_normal(LAT) * 0.1).astype(np.float32)
w_d4 = (rng.standard_normal((NA * PER, LAT + 16, 1, 1)) * 0.3).astype(np.float32)
b_d4 = (rng.standard_normal(NA * PER) * 0.1).astype(np.float32)
w_d5 = (rng.standard_normal((NA * PER, 32, 1, 1)) * 0.3).astype(np.float32)
b_d5 = (rng.standard_normal(NA * PER) * 0.1).astype(np.float32)


def i64(name, *v):
    return numpy_helper.from_array(np.array(v, np.int64), name)


inits = [
    numpy_helper.from_array(w_lat, "w_lat"), numpy_helper.from_array(b_lat, "b_lat"),
    numpy_helper.from_array(w_d4, "w_d4"), numpy_helper.from_array(b_d4, "b_d4"),
    numpy_helper.from_array(w_d5, "w_d5"), numpy_helper.from_array(b_d5, "b_d5"),
    numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "up_scales"),
    i64("s0", 0), i64("s4", 4), i64("s5", 5), i64("s9", 9), i64("ax2", 2),
]
nodes = [
    helper.make_node("Conv", ["p5", "w_lat", "b_lat"], ["lat"], name="lateral", kernel_shape=[1, 1]),
    helper.make_node("Resize", ["lat", "", "up_scales"], ["up"], name="up", mode="nearest",
                     coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
    helper.make_node("Concat", ["up", "p4"], ["merged"], name="merge", axis=1),
    helper.make_node("Conv", ["merged", "w_d4", "b_d4"], ["d4"], name="det4", kernel_shape=[1, 1]),
    helper.make_node("Conv", ["p5", "w_d5", "b_d5"], ["d5"], name="det5", kernel_shape=[1, 1]),
]
value_info = []
rows = []
for (name, _, size, stride, anchors), det in zip(LEVELS, ["d4", "d5"]):
    cells = size * size
    inits += [i64(f"{name}_split", 1, NA, PER, cells), i64(f"{name}_rows", 1, NA * cells, PER)]
    nodes += [
        helper.make_node("Sigmoid", [det], [f"{name}_sig"], name=f"{name}_sigmoid"),
        # op_type picks the CustomLayer; the attributes become its STRIDE and ANCHORS defines.
        helper.make_node("YoloDecode", [f"{name}_sig"], [f"{name}_dec"], name=f"{name}_decode",
                         domain="sample.custom", stride=stride, anchors=anchors),
        helper.make_node("Reshape", [f"{name}_dec", f"{name}_split"], [f"{name}_r"], name=f"{name}_reshape"),
        helper.make_node("Transpose", [f"{name}_r"], [f"{name}_t"], name=f"{name}_transpose", perm=[0, 1, 3, 2]),
        helper.make_node("Reshape", [f"{name}_t", f"{name}_rows"], [f"{name}_rows_out"], name=f"{name}_flatten"),
    ]
    # A custom op's output shape cannot be inferred: it must be declared.
    value_info.append(helper.make_tensor_value_info(f"{name}_dec", TensorProto.FLOAT, [1, NA * PER, size, size]))
    rows.append(f"{name}_rows_out")
nodes += [
    helper.make_node("Concat", rows, ["all"], name="levels", axis=1),
    helper.make_node("Slice", ["all", "s0", "s4", "ax2"], ["boxes"], name="box_slice"),
    helper.make_node("Slice", ["all", "s4", "s5", "ax2"], ["obj"], name="obj_slice"),
    helper.make_node("Slice", ["all", "s5", "s9", "ax2"], ["cls"], name="cls_slice"),
    helper.make_node("Mul", ["cls", "obj"], ["scores"], name="score"),
]
N = NA * sum(s * s for _, _, s, _, _ in LEVELS)
graph = helper.make_graph(
    nodes, "yolo_head",
    [helper.make_tensor_value_info("p4", TensorProto.FLOAT, [1, 16, 8, 8]),
     helper.make_tensor_value_info("p5", TensorProto.FLOAT, [1, 32, 4, 4])],
    [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [1, N, 4]),
     helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, N, NC])],
    initializer=inits, value_info=value_info,
)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("sample.custom", 1)],
                          producer_name="clhost samples/yolo_head")
onnx.checker.check_model(model)
onnx.save(model, "model.onnx")


# The references, in float64 numpy from the formulas, level by level.
def conv1x1(x, w, b):
    return np.einsum("nchw,mc->nmhw", x.astype(np.float64), w[:, :, 0, 0].astype(np.float64)) + b.reshape(1, -1, 1, 1)


lat = conv1x1(p5, w_lat, b_lat)
up = lat.repeat(2, axis=2).repeat(2, axis=3)
dets = [conv1x1(np.concatenate([up, p4], axis=1), w_d4, b_d4), conv1x1(p5, w_d5, b_d5)]
out = []
for (_, _, size, stride, anchors), d in zip(LEVELS, dets):
    s = 1 / (1 + np.exp(-d.reshape(NA, PER, size, size)))
    row, col = np.meshgrid(np.arange(size), np.arange(size), indexing="ij")
    dec = s.copy()
    dec[:, 0] = (2 * s[:, 0] - 0.5 + col) * stride
    dec[:, 1] = (2 * s[:, 1] - 0.5 + row) * stride
    dec[:, 2] = (2 * s[:, 2]) ** 2 * np.array(anchors[0::2]).reshape(NA, 1, 1)
    dec[:, 3] = (2 * s[:, 3]) ** 2 * np.array(anchors[1::2]).reshape(NA, 1, 1)
    out.append(dec.reshape(NA, PER, size * size).transpose(0, 2, 1).reshape(NA * size * size, PER))
all_rows = np.concatenate(out)[None]
np.save("p4.npy", p4)
np.save("p5.npy", p5)
np.save("boxes_ref.npy", all_rows[..., :4].astype(np.float32))
np.save("scores_ref.npy", (all_rows[..., 5:] * all_rows[..., 4:5]).astype(np.float32))
print(f"wrote model.onnx, p4.npy, p5.npy, boxes_ref.npy, scores_ref.npy ({N} boxes)")
