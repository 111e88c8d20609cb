# Makes dynamic_hw.onnx: x[N, 3, H, W] → Relu → y, every dimension but the channels
# dynamic, for loading with a given input shape. Run: python3 make_dynamic_hw.py
import onnx
from onnx import TensorProto, helper

x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3, "H", "W"])
g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "dynamic_hw", [x], [y])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="make_dynamic_hw.py")
m.ir_version = 7
onnx.checker.check_model(m)
onnx.save(m, "dynamic_hw.onnx")
