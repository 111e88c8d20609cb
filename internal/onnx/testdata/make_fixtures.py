#!/usr/bin/python3
"""Writes the ONNX fixtures of internal/onnx's tests, and numpy's outputs for some of them.

Run with Debian's python3-onnx and python3-numpy:

    /usr/bin/python3 internal/onnx/testdata/make_fixtures.py

Weights the Go tests check value by value are written here as literal lists, and the
tests state the same lists. Inputs and outputs of the models that built-in layers can run
are saved as expected/<fixture>/<tensor>.npy, computed here with plain numpy.
"""
import os
import struct

import numpy as np
import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
F = TensorProto.FLOAT


def ramp(shape, step=7, mod=13, scale=0.125):
    """Deterministic small values in [-6, 6] * scale, no randomness involved."""
    n = int(np.prod(shape))
    return (((np.arange(n) * step + 3) % mod - mod // 2) * scale).astype(np.float32).reshape(shape)


def init(name, arr, dtype=F):
    arr = np.asarray(arr)
    return helper.make_tensor(name, dtype, arr.shape, arr.flatten().tolist())


def vi(name, shape, dtype=F):
    return helper.make_tensor_value_info(name, dtype, shape)


def save(name, nodes, inputs, outputs, inits=(), value_info=(), opset=13, extra_opsets=()):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits), value_info=list(value_info))
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in extra_opsets]
    model = helper.make_model(graph, opset_imports=opsets, producer_name="make_fixtures")
    # Models at the opsets of these fixtures take IR version 7 at most; the checker wants it.
    model.ir_version = 7
    if not extra_opsets:
        # The checker wants a shape on every graph output, but leaving it out is how these
        # fixtures ask for shape inference; check a copy with those shapes filled as empty.
        checked = onnx.ModelProto()
        checked.CopyFrom(model)
        for o in checked.graph.output:
            if not o.type.tensor_type.HasField("shape"):
                o.type.tensor_type.shape.SetInParent()
        onnx.checker.check_model(checked)
    onnx.save(model, os.path.join(HERE, name + ".onnx"))
    return model


def expect(fixture, **tensors):
    d = os.path.join(HERE, "expected", fixture)
    os.makedirs(d, exist_ok=True)
    for k, v in tensors.items():
        np.save(os.path.join(d, k + ".npy"), np.ascontiguousarray(v, dtype=np.float32))


# ---- numpy references ----------------------------------------------------------------

def conv(x, w, b=None, pads=(0, 0, 0, 0), strides=(1, 1), dil=(1, 1), group=1):
    x = x.astype(np.float64)
    w = w.astype(np.float64)
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh = (h + pads[0] + pads[2] - dil[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (wd + pads[1] + pads[3] - dil[1] * (kw - 1) - 1) // strides[1] + 1
    y = np.zeros((n, m, oh, ow))
    mg = m // group
    for o in range(m):
        g = o // mg
        for i in range(oh):
            for j in range(ow):
                r0, c0 = i * strides[0], j * strides[1]
                patch = xp[:, g * cg:(g + 1) * cg, r0:r0 + dil[0] * (kh - 1) + 1:dil[0], c0:c0 + dil[1] * (kw - 1) + 1:dil[1]]
                y[:, o, i, j] = (patch * w[o]).sum(axis=(1, 2, 3))
        if b is not None:
            y[:, o] += b[o]
    return y.astype(np.float32)


def pool(x, kind, k, s, pads=(0, 0, 0, 0), ceil=False, include_pad=False):
    """ONNX MaxPool/AveragePool on NCHW; a window never counts cells beyond the padding."""
    n, c, h, w = x.shape

    def out(size, kk, ss, p0, p1):
        num = size + p0 + p1 - kk
        o = (-(-num // ss) if ceil else num // ss) + 1
        if ceil and (o - 1) * ss >= size + p0:
            o -= 1  # a window may not start in the end padding
        return o

    oh, ow = out(h, k[0], s[0], pads[0], pads[2]), out(w, k[1], s[1], pads[1], pads[3])
    y = np.zeros((n, c, oh, ow), np.float64)
    for i in range(oh):
        for j in range(ow):
            r0, c0 = i * s[0] - pads[0], j * s[1] - pads[1]
            r1, c1 = r0 + k[0], c0 + k[1]
            rr0, cc0, rr1, cc1 = max(r0, 0), max(c0, 0), min(r1, h), min(c1, w)
            win = x[:, :, rr0:rr1, cc0:cc1].astype(np.float64)
            if kind == "max":
                y[:, :, i, j] = win.max(axis=(2, 3))
            else:
                if include_pad:
                    cnt = (min(r1, h + pads[2]) - r0) * (min(c1, w + pads[3]) - c0)
                else:
                    cnt = (rr1 - rr0) * (cc1 - cc0)
                y[:, :, i, j] = win.sum(axis=(2, 3)) / cnt
    return y.astype(np.float32)


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def batchnorm(x, scale, beta, mean, var, eps):
    sh = (1, -1) + (1,) * (x.ndim - 2)
    x = x.astype(np.float64)
    return ((x - mean.reshape(sh)) / np.sqrt(var.reshape(sh) + eps) * scale.reshape(sh) + beta.reshape(sh)).astype(np.float32)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


# ---- fixtures ------------------------------------------------------------------------

def conv_fixture():
    # Grouped conv (2 groups of 1 channel → 4 outputs), asymmetric pads and strides, with
    # bias; then a 1x1 conv without bias and with dilations given (no effect at 1x1).
    W = [[[[0.5, -1.0, 0.25], [0.0, 1.0, 0.5], [-0.5, 0.75, -0.25]]],
         [[[1.0, 0.0, -1.0], [2.0, 0.0, -2.0], [1.0, 0.0, -1.0]]],
         [[[0.125, 0.25, 0.125], [0.25, 0.5, 0.25], [0.125, 0.25, 0.125]]],
         [[[-1.0, -1.0, -1.0], [-1.0, 8.0, -1.0], [-1.0, -1.0, -1.0]]]]
    B = [0.5, -0.25, 0.0, 1.0]
    W2 = [[[[1.0]], [[-1.0]], [[0.5]], [[2.0]]], [[[0.0]], [[1.5]], [[-0.5]], [[0.25]]]]
    W, B, W2 = (np.array(a, np.float32) for a in (W, B, W2))
    nodes = [
        helper.make_node("Conv", ["x", "W", "B"], ["y"], name="conv1", kernel_shape=[3, 3],
                         pads=[1, 0, 1, 0], strides=[2, 1], group=2, dilations=[1, 1]),
        helper.make_node("Conv", ["y", "W2"], ["z"], name="conv2", dilations=[2, 2]),
    ]
    save("conv", nodes, [vi("x", [1, 2, 5, 5])], [vi("z", None)], [init("W", W), init("B", B), init("W2", W2)])
    x = ramp([1, 2, 5, 5])
    y = conv(x, W, B, pads=(1, 0, 1, 0), strides=(2, 1), group=2)
    expect("conv", x=x, z=conv(y, W2))


def pool_fixture():
    nodes = [
        helper.make_node("MaxPool", ["x"], ["max_ceil"], name="max_ceil", kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
        helper.make_node("MaxPool", ["x"], ["max_pad"], name="max_pad", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("AveragePool", ["x"], ["avg_incl"], name="avg_incl", kernel_shape=[3, 3], strides=[2, 2],
                         pads=[1, 1, 1, 1], count_include_pad=1),
        helper.make_node("AveragePool", ["x"], ["avg_excl"], name="avg_excl", kernel_shape=[3, 3], strides=[2, 2],
                         pads=[1, 1, 1, 1]),
        helper.make_node("GlobalAveragePool", ["x"], ["gap"], name="gap"),
    ]
    outs = ["max_ceil", "max_pad", "avg_incl", "avg_excl", "gap"]
    save("pool", nodes, [vi("x", [1, 2, 5, 5])], [vi(o, None) for o in outs], opset=11)
    x = ramp([1, 2, 5, 5], step=5, mod=11)
    expect("pool", x=x,
           max_ceil=pool(x, "max", (2, 2), (2, 2), ceil=True),
           max_pad=pool(x, "max", (3, 3), (2, 2), (1, 1, 1, 1)),
           avg_incl=pool(x, "avg", (3, 3), (2, 2), (1, 1, 1, 1), include_pad=True),
           avg_excl=pool(x, "avg", (3, 3), (2, 2), (1, 1, 1, 1)),
           gap=x.mean(axis=(2, 3), keepdims=True))


def activations_fixture():
    # Clip in its opset 11 form: bounds as inputs, one from an initializer, one from a
    # Constant node, one omitted ("").
    nodes = [
        helper.make_node("Relu", ["x"], ["relu"], name="relu"),
        helper.make_node("LeakyRelu", ["x"], ["leaky"], name="leaky", alpha=0.2),
        helper.make_node("Sigmoid", ["x"], ["sig"], name="sig"),
        helper.make_node("Clip", ["x", "lo", "hi"], ["clip_both"], name="clip_both"),
        helper.make_node("Constant", [], ["hi2"], name="hi2_const", value_float=0.25),
        helper.make_node("Clip", ["x", "", "hi2"], ["clip_max"], name="clip_max"),
        helper.make_node("Softmax", ["x"], ["soft"], name="soft", axis=1),
    ]
    outs = ["relu", "leaky", "sig", "clip_both", "clip_max", "soft"]
    inits = [init("lo", np.array(-0.5, np.float32)), init("hi", np.array(0.5, np.float32))]
    save("activations", nodes, [vi("x", [1, 3, 2, 2])], [vi(o, None) for o in outs], inits)
    x = ramp([1, 3, 2, 2])
    expect("activations", x=x, relu=np.maximum(x, 0), leaky=np.where(x > 0, x, 0.2 * x), sig=sigmoid(x),
           clip_both=np.clip(x, -0.5, 0.5), clip_max=np.minimum(x, 0.25), soft=softmax(x, 1))


def legacy_fixture():
    # Opset 10: Clip bounds are attributes, Softmax defaults to axis 1 over all following
    # dimensions flattened, Dropout carries a ratio attribute and is a graph output.
    nodes = [
        helper.make_node("Clip", ["x"], ["c"], name="clip", min=-1.0, max=1.0),
        helper.make_node("Dropout", ["c"], ["d"], name="drop", ratio=0.5),
        helper.make_node("Softmax", ["x"], ["sm"], name="sm"),
    ]
    save("legacy", nodes, [vi("x", [1, 2, 2, 3])], [vi("d", [1, 2, 2, 3]), vi("sm", None)], opset=10)
    x = ramp([1, 2, 2, 3], scale=0.25)
    expect("legacy", x=x, d=np.clip(x, -1, 1), sm=softmax(x.reshape(1, 12), 1).reshape(1, 2, 2, 3))


def arith_fixture():
    ch = np.array([2.0, -0.5], np.float32).reshape(1, 2, 1, 1)
    Wg = ramp([3, 16], step=3, mod=7, scale=0.25)
    Bg = np.array([1.0, -1.0, 0.5], np.float32)
    Wm = np.array([[1.0, -2.0]], np.float32)
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [3, 1])
    nodes = [
        helper.make_node("Add", ["x", "y"], ["a"], name="add"),
        helper.make_node("Mul", ["a", "ch"], ["mu"], name="mul"),
        helper.make_node("Identity", ["x"], ["xi"], name="ident_x"),
        helper.make_node("Concat", ["mu", "xi"], ["cat"], name="cat", axis=1),
        helper.make_node("Flatten", ["cat"], ["f"], name="flat", axis=1),
        helper.make_node("Gemm", ["f", "Wg", "Bg"], ["g"], name="gemm", transB=1, alpha=0.5, beta=2.0),
        helper.make_node("Constant", [], ["rs"], name="rs_const", value=shape),
        helper.make_node("Reshape", ["g", "rs"], ["r"], name="reshape"),
        helper.make_node("MatMul", ["r", "Wm"], ["mm"], name="matmul"),
        helper.make_node("Identity", ["mm"], ["id1"], name="ident_mm"),
        helper.make_node("Dropout", ["id1"], ["out"], name="drop"),
    ]
    save("arith", nodes, [vi("x", [1, 2, 2, 2]), vi("y", [1, 2, 2, 2])], [vi("out", None)],
         [init("ch", ch), init("Wg", Wg), init("Bg", Bg), init("Wm", Wm)])
    x = ramp([1, 2, 2, 2])
    y = ramp([1, 2, 2, 2], step=5, mod=9)
    mu = (x + y) * ch
    f = np.concatenate([mu, x], axis=1).reshape(1, 16).astype(np.float64)
    g = 0.5 * f @ Wg.T.astype(np.float64) + 2.0 * Bg
    expect("arith", x=x, y=y, out=g.reshape(3, 1) @ Wm)


def bn_fixture():
    W = ramp([3, 2, 3, 3], step=5, mod=11, scale=0.25)
    B = np.array([0.1, -0.2, 0.3], np.float32)
    scale = np.array([1.5, 0.5, -1.0], np.float32)
    beta = np.array([0.25, 0.0, -0.75], np.float32)
    mean = np.array([0.2, -0.4, 1.0], np.float32)
    var = np.array([0.5, 2.0, 0.1], np.float32)
    s2 = np.array([2.0, 0.25], np.float32)
    b2 = np.array([-1.0, 1.0], np.float32)
    m2 = np.array([0.5, -0.5], np.float32)
    v2 = np.array([4.0, 0.25], np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "W", "B"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "scale", "beta", "mean", "var"], ["bn"], name="bn", epsilon=1e-3),
        helper.make_node("Relu", ["bn"], ["y1"], name="relu"),
        helper.make_node("BatchNormalization", ["x", "s2", "b2", "m2", "v2"], ["y2"], name="bn_in"),
    ]
    inits = [init(k, v) for k, v in dict(W=W, B=B, scale=scale, beta=beta, mean=mean, var=var,
                                         s2=s2, b2=b2, m2=m2, v2=v2).items()]
    save("bn", nodes, [vi("x", [1, 2, 4, 4])], [vi("y1", None), vi("y2", [1, 2, 4, 4])], inits,
         value_info=[vi("c", [1, 3, 4, 4])])
    x = ramp([1, 2, 4, 4], step=3, mod=7, scale=0.5)
    c = conv(x, W, B, pads=(1, 1, 1, 1))
    expect("bn", x=x, c=c, y1=np.maximum(batchnorm(c, scale, beta, mean, var, 1e-3), 0),
           y2=batchnorm(x, s2, b2, m2, v2, 1e-5))


def custom_fixture():
    # A custom-domain operator with constant inputs, every attribute kind, and its output
    # shape declared in value_info; the Relu after it is inferred.
    node = helper.make_node("ScaleShift", ["x", "block1.scale", "block1.shift"], ["y"], name="ss",
                            domain="com.example", axes=[1], weights=[0.5, 1.5], mode="channel",
                            eps=1e-4, count=3)
    node.attribute.append(helper.make_attribute("table", helper.make_tensor("table", TensorProto.INT32, [2], [7, -8])))
    nodes = [node, helper.make_node("Relu", ["y"], ["z"], name="relu")]
    inits = [init("block1.scale", np.array([0.5, 1.0, 2.0], np.float32)),
             init("block1.shift", np.array([-1.0, 0.0, 1.0], np.float32))]
    save("custom", nodes, [vi("x", [1, 3, 2, 2])], [vi("z", None)], inits,
         value_info=[vi("y", [1, 3, 2, 2])], extra_opsets=[("com.example", 1)])


def unknown_fixtures():
    # Operators clhost has no implementation for: without declared output shapes the
    # import fails naming them; with them it succeeds and UnsupportedOps lists them.
    nodes = [
        helper.make_node("FancyOp", ["x"], ["y"], name="fancy"),
        helper.make_node("Relu", ["y"], ["r"], name="relu"),
        helper.make_node("OtherOp", ["r"], ["z"], name="other", domain="com.example"),
    ]
    save("unknown_noshape", nodes, [vi("x", [1, 2])], [vi("z", None)], extra_opsets=[("com.example", 1)])
    nodes = [
        helper.make_node("FancyOp", ["x"], ["y"], name="fancy"),
        helper.make_node("Relu", ["y"], ["r"], name="relu"),
        helper.make_node("OtherOp", ["r"], ["z"], name="other", domain="com.example"),
        helper.make_node("OtherOp", ["z"], ["w"], name="other2", domain="com.example"),
    ]
    save("unknown", nodes, [vi("x", [1, 2])], [vi("w", [1, 2])],
         value_info=[vi("y", [1, 2]), vi("z", [1, 2])], extra_opsets=[("com.example", 1)])


def dynamic_fixture():
    W = ramp([2, 3, 3, 3], step=5, mod=9, scale=0.25)
    Wg = ramp([5, 2], step=3, mod=5, scale=0.5)
    nodes = [
        helper.make_node("Conv", ["x", "W"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("GlobalAveragePool", ["c"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flat"),
        helper.make_node("Gemm", ["f", "Wg"], ["y"], name="fc", transB=1),
    ]
    save("dynamic", nodes, [vi("x", ["N", 3, 4, 4])], [vi("y", ["N", 5])], [init("W", W), init("Wg", Wg)],
         value_info=[vi("c", ["N", 2, 4, 4]), vi("g", ["N", "C", 1, 1])])
    x = ramp([3, 3, 4, 4], step=5, mod=17)
    f = conv(x, W, pads=(1, 1, 1, 1)).astype(np.float64).mean(axis=(2, 3))
    expect("dynamic", x=x, y=f @ Wg.T.astype(np.float64))


def ids_fixture():
    # An embedding lookup over INT64 ids (cmd/clhost's TestRunIntegerInput): row r of the
    # table holds 4r .. 4r+3.
    table = np.arange(40, dtype=np.float32).reshape(10, 4)
    nodes = [helper.make_node("Gather", ["table", "ids"], ["y"], name="lookup")]
    save("ids", nodes, [vi("ids", [2, 3], TensorProto.INT64)], [vi("y", [2, 3, 4])], [init("table", table)])


def external_fixtures():
    e1 = np.array([[1.0, 2.0, 3.0, 4.0]], np.float32)
    e2 = np.array([0.5, -1.0, 2.0, 0.25], np.float32)
    blob = b"\x00" * 8 + e1.tobytes() + e2.tobytes()
    with open(os.path.join(HERE, "external.bin"), "wb") as f:
        f.write(blob)

    def ext(name, shape, location, offset, length=None):
        t = TensorProto(name=name, data_type=F, dims=shape)
        t.data_location = TensorProto.EXTERNAL
        entries = [("location", location), ("offset", str(offset))]
        if length is not None:
            entries.append(("length", str(length)))
        for k, v in entries:
            e = t.external_data.add()
            e.key, e.value = k, v
        return t

    nodes = [helper.make_node("Add", ["x", "e1"], ["a"], name="add"),
             helper.make_node("Mul", ["a", "e2"], ["y"], name="mul")]
    # e2 has no length: it runs to the end of the file.
    save("external", nodes, [vi("x", [1, 4])], [vi("y", None)],
         [ext("e1", [1, 4], "external.bin", 8, 16), ext("e2", [4], "external.bin", 24)])
    x = np.array([[0.5, -0.5, 1.5, -2.0]], np.float32)
    expect("external", x=x, y=(x + e1) * e2)
    save("external_escape", nodes, [vi("x", [1, 4])], [vi("y", None)],
         [ext("e1", [1, 4], "../testdata/external.bin", 8, 16), ext("e2", [4], "external.bin", 24)])


def types_fixture():
    # One initializer per element type and storage form, all read by a custom operator so
    # none is pruned as unused.
    T = TensorProto
    inits = [
        helper.make_tensor("f32_typed", T.FLOAT, [2], [1.5, -2.0]),
        helper.make_tensor("f32_raw", T.FLOAT, [2], struct.pack("<2f", 0.25, 8.0), raw=True),
        helper.make_tensor("f32_scalar", T.FLOAT, [], [3.5]),
        helper.make_tensor("f32_empty", T.FLOAT, [0, 3], []),
        helper.make_tensor("f64_typed", T.DOUBLE, [2], [0.1, 3.0]),
        helper.make_tensor("f64_raw", T.DOUBLE, [2], struct.pack("<2d", 1.5, -2.25), raw=True),
        helper.make_tensor("f16_typed", T.FLOAT16, [2], [1.0, -2.5]),
        helper.make_tensor("f16_raw", T.FLOAT16, [2], struct.pack("<2H", 0x3C00, 0xC100), raw=True),
        helper.make_tensor("bf16_typed", T.BFLOAT16, [1], [1.5]),
        helper.make_tensor("i8_typed", T.INT8, [2], [-3, 7]),
        helper.make_tensor("u8_raw", T.UINT8, [2], bytes([0, 255]), raw=True),
        helper.make_tensor("bool_typed", T.BOOL, [3], [True, False, True]),
        helper.make_tensor("i16_raw", T.INT16, [2], struct.pack("<2h", -2, 300), raw=True),
        helper.make_tensor("u16_typed", T.UINT16, [2], [65535, 1]),
        helper.make_tensor("i32_typed", T.INT32, [2], [-5, 6]),
        helper.make_tensor("i64_typed", T.INT64, [2], [-7, 1 << 40]),
        helper.make_tensor("u32_typed", T.UINT32, [1], [4000000000]),
        helper.make_tensor("u64_raw", T.UINT64, [1], struct.pack("<Q", 5), raw=True),
    ]
    node = helper.make_node("Sink", ["x"] + [t.name for t in inits], ["y"], name="sink", domain="com.example")
    save("types", [node], [vi("x", [1])], [vi("y", [1])], inits, extra_opsets=[("com.example", 1)])


def identity_fixture():
    # Graph outputs that are copies: of a layer's output (the layer's tensor takes the
    # output's name) and of a graph input (the copy stays as an Identity layer).
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Identity", ["r"], ["out1"], name="copy_r"),
        helper.make_node("Identity", ["x"], ["out2"], name="copy_x"),
        helper.make_node("Sigmoid", ["out1"], ["out3"], name="sig"),
    ]
    save("identity", nodes, [vi("x", [1, 2])], [vi("out1", [1, 2]), vi("out2", None), vi("out3", None)])


if __name__ == "__main__":
    conv_fixture()
    pool_fixture()
    activations_fixture()
    legacy_fixture()
    arith_fixture()
    bn_fixture()
    custom_fixture()
    unknown_fixtures()
    dynamic_fixture()
    ids_fixture()
    external_fixtures()
    types_fixture()
    identity_fixture()
