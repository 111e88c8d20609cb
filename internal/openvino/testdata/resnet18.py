"""Writes a ResNet-18 (torchvision's, random weights) as ONNX and as an OpenVINO IR of the
same weights, for BenchmarkLoadResNet18: python3 resnet18.py OUTDIR.

The IR is made from the exported ONNX graph with irwriter, op by op (Conv → Convolution
with its bias as an Add of a [1,C,1,1] Const, Gemm → MatMul and Add, ...), float32
weights, as OpenVINO's converter writes an uncompressed model.
"""
import sys
import numpy as np
import onnx
from onnx import numpy_helper, shape_inference
import torch
import torchvision
from irwriter import IR

out = sys.argv[1]
torch.manual_seed(0)
net = torchvision.models.resnet18(weights=None).eval()
onnx_path = out + "/resnet18.onnx"
torch.onnx.export(net, torch.randn(1, 3, 224, 224), onnx_path, input_names=["input"], output_names=["logits"], opset_version=13)
m = shape_inference.infer_shapes(onnx.load(onnx_path))
g = m.graph
inits = {t.name: numpy_helper.to_array(t) for t in g.initializer}
shapes = {}
for v in list(g.value_info) + list(g.input) + list(g.output):
    shapes[v.name] = [d.dim_value for d in v.type.tensor_type.shape.dim]

ir = IR("resnet18")
val = {"input": ir.param("input", shapes["input"])}


def attr(n, name, default=None):
    for a in n.attribute:
        if a.name == name:
            return list(a.ints) if a.ints else a.i
    return default


for n in g.node:
    y = n.output[0]
    if n.op_type == "Identity":  # the exporter's copies of shared initializers
        if n.input[0] in inits:
            inits[y] = inits[n.input[0]]
        else:
            val[y] = val[n.input[0]]
        continue
    ys = shapes[y]
    x = val[n.input[0]]
    if n.op_type == "Conv":
        pads = attr(n, "pads", [0, 0, 0, 0])
        d = {"strides": ",".join(map(str, attr(n, "strides", [1, 1]))), "dilations": "1,1",
             "pads_begin": "%d,%d" % tuple(pads[:2]), "pads_end": "%d,%d" % tuple(pads[2:]), "auto_pad": "explicit"}
        c = ir.op("Convolution", n.name, [x, ir.const(n.input[1], inits[n.input[1]])], d, [ys])[0]
        if len(n.input) > 2:
            b = inits[n.input[2]].reshape(1, -1, 1, 1)
            c = ir.op("Add", n.name + "/bias", [c, ir.const(n.input[2], b)], {"auto_broadcast": "numpy"}, [ys])[0]
        val[y] = c
    elif n.op_type == "Relu":
        val[y] = ir.op("ReLU", n.name, [x], {}, [ys])[0]
    elif n.op_type == "MaxPool":
        pads = attr(n, "pads")
        d = {"strides": ",".join(map(str, attr(n, "strides"))), "dilations": "1,1", "pads_begin": "%d,%d" % tuple(pads[:2]),
             "pads_end": "%d,%d" % tuple(pads[2:]), "kernel": ",".join(map(str, attr(n, "kernel_shape"))), "rounding_type": "floor", "auto_pad": "explicit"}
        val[y] = ir.op("MaxPool", n.name, [x], d, [ys, ys], version="opset8")[0]
    elif n.op_type == "Add":
        val[y] = ir.op("Add", n.name, [x, val[n.input[1]]], {"auto_broadcast": "numpy"}, [ys])[0]
    elif n.op_type == "GlobalAveragePool":
        val[y] = ir.op("ReduceMean", n.name, [x, ir.const(n.name + "/axes", np.array([2, 3], np.int64))], {"keep_dims": "true"}, [ys])[0]
    elif n.op_type == "Flatten":
        val[y] = ir.op("Reshape", n.name, [x, ir.const(n.name + "/shape", np.array([0, -1], np.int64))], {"special_zero": "true"}, [ys])[0]
    elif n.op_type == "Gemm":
        mm = ir.op("MatMul", n.name, [x, ir.const(n.input[1], inits[n.input[1]])], {"transpose_a": "false", "transpose_b": "true"}, [ys])[0]
        val[y] = ir.op("Add", n.name + "/bias", [mm, ir.const(n.input[2], inits[n.input[2]])], {"auto_broadcast": "numpy"}, [ys], names=[y])[0]
    else:
        raise SystemExit("unexpected op " + n.op_type)
ir.result("logits/sink_port_0", val["logits"])
ir.save(out + "/resnet18")
