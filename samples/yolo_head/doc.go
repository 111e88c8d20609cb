// Package yolohead is the sample of a YOLO-style detector head whose box decode is a custom
// layer (README.md). Its test runs model.onnx with yolo_decode.xml on the OpenCL device and
// compares both outputs with numpy's values, computed by make_model.py from the formulas.
package yolohead
