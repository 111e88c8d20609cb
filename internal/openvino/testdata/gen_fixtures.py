"""Writes the IR fixtures of internal/openvino's tests and their expected outputs.

Run from this folder: python3 gen_fixtures.py. The expected outputs come from PyTorch
(convolutions, pooling, softmax) and numpy (the prior boxes, the custom layer's formula),
never from clhost. Weights are rounded to float16 first where the IR stores them so.
"""
import numpy as np
import torch
import torch.nn.functional as F
from irwriter import IR

rng = np.random.default_rng(59)


def f16(a):
    return a.astype(np.float16).astype(np.float32)


def classifier():
    ir = IR("classifier")
    B = -1
    x = ir.param("image", [B, 3, 16, 16])
    w1 = rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.3
    b1 = rng.standard_normal((1, 8, 1, 1)).astype(np.float32) * 0.1
    dw = rng.standard_normal((8, 1, 1, 3, 3)).astype(np.float32) * 0.3
    fc = rng.standard_normal((10, 128)).astype(np.float32) * 0.1
    fb = rng.standard_normal((10,)).astype(np.float32) * 0.1
    W1 = ir.weights("conv1/weights", w1)
    c = ir.op("Convolution", "conv1", [x, W1], {"strides": "1, 1", "dilations": "1, 1", "pads_begin": "1, 1", "pads_end": "1, 1", "auto_pad": "explicit"}, [[B, 8, 16, 16]])[0]
    c = ir.op("Add", "conv1/bias", [c, ir.weights("conv1/b", b1)], {"auto_broadcast": "numpy"}, [[B, 8, 16, 16]])[0]
    c = ir.op("ReLU", "relu1", [c], {}, [[B, 8, 16, 16]])[0]
    # MaxPool-8: values and indices; the indices port is read by nothing.
    p = ir.op("MaxPool", "pool1", [c], {"strides": "2,2", "dilations": "1,1", "pads_begin": "0,0", "pads_end": "0,0", "kernel": "2,2",
                                         "rounding_type": "floor", "auto_pad": "explicit", "index_element_type": "i64", "axis": "0"},
              [[B, 8, 8, 8], [B, 8, 8, 8]], version="opset8")
    p = p[0]
    g = ir.op("GroupConvolution", "dw", [p, ir.weights("dw/weights", dw)], {"strides": "1,1", "dilations": "1,1", "pads_begin": "0,0", "pads_end": "0,0", "auto_pad": "same_upper"}, [[B, 8, 8, 8]])[0]
    g = ir.op("Clamp", "relu6", [g], {"min": "0", "max": "6"}, [[B, 8, 8, 8]])[0]
    a = ir.op("AvgPool", "pool2", [g], {"strides": "2,2", "pads_begin": "0,0", "pads_end": "1,1", "kernel": "3,3", "exclude-pad": "true", "rounding_type": "floor", "auto_pad": "explicit"}, [[B, 8, 4, 4]])[0]
    # The flattening Reshape's target comes from ShapeOf → Gather → Unsqueeze → Concat,
    # as a converter writes it for a dynamic batch.
    s = ir.op("ShapeOf", "shape", [a], {"output_type": "i64"}, [[4]], version="opset3", prec="I64")[0]
    bidx = ir.const("batch_index", np.array(0, np.int64))
    ax0 = ir.const("axis0", np.array(0, np.int64))
    b = ir.op("Gather", "batch", [s, bidx, ax0], {"batch_dims": "0"}, [[]], version="opset8", prec="I64")[0]
    b = ir.op("Unsqueeze", "batch1", [b, ir.const("axes0", np.array([0], np.int64))], {}, [[1]], prec="I64")[0]
    t = ir.op("Concat", "target", [b, ir.const("features", np.array([128], np.int64))], {"axis": "0"}, [[2]], prec="I64")[0]
    f = ir.op("Reshape", "flatten", [a, t], {"special_zero": "false"}, [[B, 128]])[0]
    m = ir.op("MatMul", "fc", [f, ir.weights("fc/weights", fc)], {"transpose_a": "false", "transpose_b": "true"}, [[B, 10]])[0]
    m = ir.op("Add", "fc/bias", [m, ir.weights("fc/b", fb)], {"auto_broadcast": "numpy"}, [[B, 10]])[0]
    sm = ir.op("SoftMax", "softmax", [m], {"axis": "1"}, [[B, 10]], names=["probs"])[0]
    ir.result("probs/sink_port_0", sm)
    ir.save("classifier")

    xin = rng.standard_normal((2, 3, 16, 16)).astype(np.float32)
    t = torch.from_numpy
    y = F.conv2d(t(xin), t(f16(w1)), padding=1) + t(f16(b1))
    y = F.max_pool2d(F.relu(y), 2)
    y = F.conv2d(y, t(f16(dw)).reshape(8, 1, 3, 3), padding=1, groups=8).clamp(0, 6)
    y = F.avg_pool2d(F.pad(y, (0, 1, 0, 1)), 3, 2)  # pads at the end only
    # exclude-pad: divide by the taps inside the input, counted with an all-ones map
    ones = F.avg_pool2d(F.pad(torch.ones(1, 1, 8, 8), (0, 1, 0, 1)), 3, 2)
    y = y / ones
    y = y.reshape(2, 128) @ t(f16(fc)).T + t(f16(fb))
    y = torch.softmax(y, 1)
    np.save("classifier_input.npy", xin)
    np.save("classifier_probs.npy", y.numpy().astype(np.float32))


def prior_boxes_clustered(h, w, img_h, img_w, widths, heights, offset, variance):
    step_w, step_h = img_w / w, img_h / h
    boxes = []
    for y in range(h):
        for x in range(w):
            cx, cy = (x + offset) * step_w, (y + offset) * step_h
            for bw, bh in zip(widths, heights):
                boxes += [(cx - bw / 2) / img_w, (cy - bh / 2) / img_h, (cx + bw / 2) / img_w, (cy + bh / 2) / img_h]
    boxes = np.array(boxes, np.float32)
    var = np.tile(np.array(variance, np.float32), len(boxes) // 4)
    return np.stack([boxes, var])


def detector():
    ir = IR("ssd_head")
    x = ir.param("data", [1, 3, 32, 32])
    wb = rng.standard_normal((16, 3, 4, 4)).astype(np.float32) * 0.2
    wl = rng.standard_normal((12, 16, 3, 3)).astype(np.float32) * 0.1
    wc = rng.standard_normal((6, 16, 3, 3)).astype(np.float32) * 0.1
    feat = ir.op("Convolution", "backbone", [x, ir.weights("backbone/w", wb, compress=False)], {"strides": "4,4", "dilations": "1,1", "pads_begin": "0,0", "pads_end": "0,0", "auto_pad": "explicit"}, [[1, 16, 8, 8]])[0]
    feat = ir.op("ReLU", "backbone/relu", [feat], {}, [[1, 16, 8, 8]])[0]
    conv = {"strides": "1,1", "dilations": "1,1", "pads_begin": "1,1", "pads_end": "1,1", "auto_pad": "explicit"}
    loc = ir.op("Convolution", "loc", [feat, ir.weights("loc/w", wl)], conv, [[1, 12, 8, 8]])[0]
    loc = ir.op("Transpose", "loc/nhwc", [loc, ir.const("perm", np.array([0, 2, 3, 1], np.int64))], {}, [[1, 8, 8, 12]])[0]
    loc = ir.op("Reshape", "loc/flat", [loc, ir.const("flat", np.array([0, -1], np.int64))], {"special_zero": "true"}, [[1, 768]], names=["mbox_loc"])[0]
    conf = ir.op("Convolution", "conf", [feat, ir.weights("conf/w", wc)], conv, [[1, 6, 8, 8]])[0]
    conf = ir.op("Transpose", "conf/nhwc", [conf, ir.const("perm2", np.array([0, 2, 3, 1], np.int64))], {}, [[1, 8, 8, 6]])[0]
    conf = ir.op("Reshape", "conf/pairs", [conf, ir.const("pairs", np.array([0, -1, 2], np.int64))], {"special_zero": "true"}, [[1, 192, 2]])[0]
    conf = ir.op("Softmax", "conf/softmax", [conf], {"axis": "-1"}, [[1, 192, 2]], version="opset8")[0]
    conf = ir.op("Reshape", "conf/flat", [conf, ir.const("flat2", np.array([0, -1], np.int64))], {"special_zero": "true"}, [[1, 384]], names=["mbox_conf"])[0]
    # The prior boxes read the sizes of the feature map and the image through ShapeOf and
    # StridedSlice, as the serializer writes them.
    def hw(src, name, dims):
        s = ir.op("ShapeOf", name + "/shape", [src], {"output_type": "i64"}, [[4]], version="opset3", prec="I64")[0]
        return ir.op("StridedSlice", name + "/hw", [s, ir.const(name + "/begin", np.array([2], np.int64)), ir.const(name + "/end", np.array([4], np.int64)), ir.const(name + "/stride", np.array([1], np.int64))],
                     {"begin_mask": "0", "end_mask": "0", "new_axis_mask": "", "shrink_axis_mask": "", "ellipsis_mask": ""}, [[2]], prec="I64")[0]
    widths, heights = [4.0, 8.0, 6.5], [4.0, 5.0, 9.0]
    pb = ir.op("PriorBoxClustered", "priors", [hw(feat, "feat", 4), hw(x, "img", 4)],
               {"width": "4, 8, 6.5", "height": "4, 5, 9", "clip": "false", "step": "0", "step_w": "0", "step_h": "0", "offset": "0.5", "variance": "0.1, 0.1, 0.2, 0.2", "img_h": "0", "img_w": "0"},
               [[2, 768]], names=["mbox_priorbox"])[0]
    ir.result("mbox_loc/sink_port_0", loc)
    ir.result("mbox_conf/sink_port_0", conf)
    ir.result("mbox_priorbox/sink_port_0", pb)
    ir.save("ssd_head")

    xin = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
    t = torch.from_numpy
    f = F.relu(F.conv2d(t(xin), t(wb), stride=4))
    l = F.conv2d(f, t(f16(wl)), padding=1).permute(0, 2, 3, 1).reshape(1, -1)
    c = torch.softmax(F.conv2d(f, t(f16(wc)), padding=1).permute(0, 2, 3, 1).reshape(1, -1, 2), -1).reshape(1, -1)
    np.save("ssd_head_input.npy", xin)
    np.save("ssd_head_loc.npy", l.numpy())
    np.save("ssd_head_conf.npy", c.numpy())
    np.save("ssd_head_priors.npy", prior_boxes_clustered(8, 8, 32, 32, widths, heights, 0.5, [0.1, 0.1, 0.2, 0.2]))


def custom():
    ir = IR("custom")
    x = ir.param("x", [1, 3, 4, 4])
    scale = np.array([0.5, 1, 2], np.float32)
    shift = np.array([-1, 0, 1], np.float32)
    s = ir.op("ScaleShift", "scaleshift", [x, ir.const("block1/scale", scale), ir.const("block1/shift", shift)],
              {"weights": "0.5, 1.5", "count": "3"}, [[1, 3, 4, 4]], version="extension")[0]
    y = ir.op("ReLU", "relu", [s], {}, [[1, 3, 4, 4]], names=["y"])[0]
    ir.result("y/sink_port_0", y)
    ir.save("custom")
    xin = rng.standard_normal((1, 3, 4, 4)).astype(np.float32) * 4
    z = (xin * scale[None, :, None, None] + shift[None, :, None, None]) * 0.5 + 1.5 * 3
    np.save("custom_input.npy", xin)
    np.save("custom_y.npy", np.maximum(z, 0).astype(np.float32))


def prior_boxes(h, w, img_h, img_w, min_sizes, max_sizes, ratios, flip, clip, offset, variance):
    """PriorBox-1 as its reference implementation computes it (scale_all_sizes)."""
    ars = [1.0]
    for r in ratios:
        if any(abs(r - a) < 1e-6 for a in ars):
            continue
        ars.append(r)
        if flip:
            ars.append(1 / r)
    sw, sh = img_w / w, img_h / h
    boxes = []
    for y in range(h):
        for x in range(w):
            cx, cy = (x + offset) * sw, (y + offset) * sh
            for i, m in enumerate(min_sizes):
                sizes = [(m, m)]
                if i < len(max_sizes):
                    s = np.sqrt(m * max_sizes[i])
                    sizes.append((s, s))
                sizes += [(m * np.sqrt(a), m / np.sqrt(a)) for a in ars if abs(a - 1) > 1e-6]
                for bw, bh in sizes:
                    boxes += [(cx - bw / 2) / img_w, (cy - bh / 2) / img_h, (cx + bw / 2) / img_w, (cy + bh / 2) / img_h]
    boxes = np.array(boxes, np.float32)
    if clip:
        boxes = np.clip(boxes, 0, 1)
    return np.stack([boxes, np.tile(np.array(variance, np.float32), len(boxes) // 4)])


class Both:
    """Builds the IR and computes the same graph in PyTorch, the port dims from PyTorch's."""

    def __init__(self, ir):
        self.ir = ir

    def op(self, typ, name, ins, data, fn, version="opset1", names=None, n_out=1):
        ports = [p for p, _ in ins]
        vals = fn(*[v for _, v in ins])
        if n_out == 1:
            vals = [vals]
        outs = self.ir.op(typ, name, ports, data, [list(v.shape) for v in vals], version=version, names=names)
        res = list(zip(outs, vals))
        return res[0] if n_out == 1 else res

    def const(self, name, a):
        return (self.ir.const(name, a), torch.from_numpy(np.array(a)))


def segmenter():
    """The ops of segmentation networks and their relatives, one after another."""
    ir = IR("segmenter")
    G = Both(ir)
    xin = rng.standard_normal((1, 4, 8, 8)).astype(np.float32)
    x = (ir.param("x", [1, 4, 8, 8]), torch.from_numpy(xin))
    wt = rng.standard_normal((4, 4, 2, 2)).astype(np.float32) * 0.5
    y = G.op("ConvolutionBackpropData", "up", [x, G.const("up/w", wt)], {"strides": "2,2", "dilations": "1,1", "pads_begin": "0,0", "pads_end": "0,0", "auto_pad": "explicit", "output_padding": "0,0"},
             lambda a, w: F.conv_transpose2d(a, w, stride=2))
    slope = np.array([0.1, 0.2, 0.3, 0.4], np.float32)
    y = G.op("PRelu", "prelu", [y, G.const("slope", slope)], {}, lambda a, s: F.prelu(a, s))
    y = G.op("Interpolate", "down", [y, G.const("sizes", np.array([8, 8], np.int64)), G.const("scales", np.array([0.5, 0.5], np.float32)), G.const("interp_axes", np.array([2, 3], np.int64))],
             {"mode": "linear_onnx", "shape_calculation_mode": "scales", "coordinate_transformation_mode": "half_pixel", "nearest_mode": "round_prefer_floor", "antialias": "false", "pads_begin": "0,0,0,0", "pads_end": "0,0,0,0", "cube_coeff": "-0.75"},
             lambda a, *_: F.interpolate(a, scale_factor=0.5, mode="bilinear", align_corners=False), version="opset4")
    y = G.op("Pad", "pad", [y, G.const("pb", np.array([0, 0, 1, 1], np.int64)), G.const("pe", np.array([0, 0, 1, 2], np.int64)), G.const("pv", np.array(0.5, np.float32))], {"pad_mode": "constant"},
             lambda a, *_: F.pad(a, (1, 2, 1, 1), value=0.5), version="opset12")
    # begin_mask and end_mask 1 ignore begin and end on axes 0 and 1.
    y = G.op("StridedSlice", "crop", [y, G.const("sb", np.array([5, 5, 1, 1], np.int64)), G.const("se", np.array([0, 0, -1, -2], np.int64)), G.const("ss", np.array([1, 1, 1, 1], np.int64))],
             {"begin_mask": "1,1,0,0", "end_mask": "1,1,0,0", "new_axis_mask": "", "shrink_axis_mask": "", "ellipsis_mask": ""}, lambda a, *_: a[:, :, 1:-1, 1:-2])
    y = G.op("LRN", "lrn", [y, G.const("lrn_axes", np.array([1], np.int64))], {"alpha": "0.001", "beta": "0.75", "bias": "1", "size": "3"},
             lambda a, _: F.local_response_norm(a, 3, alpha=0.001, beta=0.75, k=1.0))
    def mvn(a, _):
        m = a.mean((2, 3), keepdim=True)
        return (a - m) / torch.sqrt(((a - m) ** 2).mean((2, 3), keepdim=True) + 1e-5)
    y = G.op("MVN", "mvn", [y, G.const("mvn_axes", np.array([2, 3], np.int64))], {"eps": "1e-5", "normalize_variance": "true", "eps_mode": "inside_sqrt"}, mvn, version="opset6")
    halves = G.op("Split", "halves", [y, G.const("split_axis", np.array(1, np.int64))], {"num_splits": "2"}, lambda a, _: list(torch.split(a, 2, 1)), n_out=2)
    a = G.op("Sigmoid", "gate", [halves[0]], {}, torch.sigmoid)
    b = G.op("Tanh", "tanh", [halves[1]], {}, torch.tanh)
    y = G.op("Multiply", "gated", [a, b], {"auto_broadcast": "numpy"}, lambda p, q: p * q)
    parts = G.op("VariadicSplit", "rows", [y, G.const("rows_axis", np.array(2, np.int64)), G.const("rows_len", np.array([3, -1], np.int64))], {}, lambda a, *_: list(torch.split(a, [3, 5], 2)), n_out=2)
    y = G.op("Concat", "rolled", [parts[1], parts[0]], {"axis": "2"}, lambda p, q: torch.cat([p, q], 2))
    y = G.op("Swish", "swish", [y, G.const("beta", np.array(1.5, np.float32))], {}, lambda a, _: a * torch.sigmoid(1.5 * a), version="opset4")
    y = G.op("HSigmoid", "hsig", [y], {}, lambda a: F.relu6(a + 3) / 6, version="opset5")
    y = G.op("Subtract", "centre", [y, G.const("half", np.array([[[0.5]], [[0.25]]], np.float32))], {"auto_broadcast": "numpy"}, lambda a, c: a - c)
    y = G.op("Elu", "elu", [y], {"alpha": "0.5"}, lambda a: F.elu(a, 0.5))
    y = G.op("Gelu", "gelu", [y], {"approximation_mode": "TANH"}, lambda a: F.gelu(a, approximate="tanh"), version="opset7")
    y = G.op("Unsqueeze", "lift", [y, G.const("lift_axes", np.array([0], np.int64))], {}, lambda a, _: a.unsqueeze(0))
    y = G.op("Squeeze", "drop", [y, G.const("drop_axes", np.array([0], np.int64))], {}, lambda a, _: a.squeeze(0))
    y = G.op("Interpolate", "up2", [y, G.const("up2_sizes", np.array([16, 16], np.int64)), G.const("up2_axes", np.array([2, 3], np.int64))],
             {"mode": "nearest", "shape_calculation_mode": "sizes", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor", "antialias": "false", "pads_begin": "0,0,0,0", "pads_end": "0,0,0,0", "cube_coeff": "-0.75"},
             lambda a, *_: F.interpolate(a, size=(16, 16), mode="nearest"), version="opset11")
    r = G.op("ReduceMax", "rowmax", [y, G.const("rm_axes", np.array([3], np.int64))], {"keep_dims": "false"}, lambda a, _: a.amax(3))
    r = G.op("NormalizeL2", "l2", [r, G.const("l2_axes", np.array([2], np.int64))], {"eps": "1e-6", "eps_mode": "add"}, lambda a, _: a / torch.sqrt((a * a).sum(2, keepdim=True) + 1e-6), names=["rows"])
    s = G.op("ReduceSum", "total", [y, G.const("rs_axes", np.array([2, 3], np.int64))], {"keep_dims": "true"}, lambda a, _: a.sum((2, 3), keepdim=True))
    s = G.op("Divide", "mean", [s, G.const("count", np.array(256, np.float32))], {"auto_broadcast": "numpy"}, lambda a, c: a / c, names=["mean"])
    # PriorBox over the sizes of the upsampled map and the input.
    def hw(src, name):
        sh = G.op("ShapeOf", name + "/shape", [src], {"output_type": "i64"}, lambda a: torch.tensor(a.shape, dtype=torch.int64), version="opset3")
        return G.op("StridedSlice", name + "/hw", [sh, G.const(name + "/b", np.array([2], np.int64)), G.const(name + "/e", np.array([4], np.int64)), G.const(name + "/s", np.array([1], np.int64))],
                    {"begin_mask": "0", "end_mask": "0", "new_axis_mask": "", "shrink_axis_mask": "", "ellipsis_mask": ""}, lambda a, *_: a[2:4])
    pb = prior_boxes(16, 16, 8, 8, [2.0, 4.0], [5.0], [2.0], True, True, 0.5, [0.1, 0.1, 0.2, 0.2])
    p = G.op("PriorBox", "priors", [hw(y, "map"), hw(x, "img")],
             {"min_size": "2, 4", "max_size": "5", "aspect_ratio": "2", "flip": "true", "clip": "true", "step": "0", "offset": "0.5", "variance": "0.1,0.1,0.2,0.2", "scale_all_sizes": "true", "density": "", "fixed_size": "", "fixed_ratio": ""},
             lambda *_: torch.from_numpy(pb), names=["priors"])
    ir.result("rows/sink", r[0])
    ir.result("mean/sink", s[0])
    ir.result("priors/sink", p[0])
    ir.save("segmenter")
    np.save("segmenter_input.npy", xin)
    np.save("segmenter_rows.npy", r[1].numpy().astype(np.float32))
    np.save("segmenter_mean.npy", s[1].numpy().astype(np.float32))
    np.save("segmenter_priors.npy", pb)


if __name__ == "__main__":
    classifier()
    detector()
    custom()
    segmenter()
