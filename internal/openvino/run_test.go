package openvino_test

// The fixtures of testdata (written by gen_fixtures.py with its own small IR writer, in
// the form OpenVINO's serializer writes) run end to end on the OpenCL CPU device through
// host's loader, and their outputs are compared with PyTorch's and numpy's, saved beside
// them.

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/clhost/clhost/host"
	"github.com/clhost/clhost/tensorio"
)

func npy(t *testing.T, name string) *tensorio.Array {
	t.Helper()
	a, err := tensorio.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// runIR loads an IR as `clhost run` does, with only the given configurations, and runs
// one inference.
func runIR(t *testing.T, xml string, o host.LoadOptions, configs []string, inputs map[string]*tensorio.Array) map[string]*host.Tensor {
	t.Helper()
	return runIRWith(t, xml, o, host.Options{Device: "cpu", NoGlobalConfig: true, Configs: configs}, inputs)
}

// runIRWith is runIR with the engine's options.
func runIRWith(t *testing.T, xml string, o host.LoadOptions, eo host.Options, inputs map[string]*tensorio.Array) map[string]*host.Tensor {
	t.Helper()
	e, err := host.NewEngine(eo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	o.Layers = e.Layers
	m, err := o.Load(filepath.Join("testdata", xml))
	if err != nil {
		t.Fatal(err)
	}
	n, err := e.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]*host.Tensor{}
	for k, a := range inputs {
		in[k] = &host.Tensor{Shape: a.Shape, Data: a.Data}
	}
	out, err := n.Infer(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func compare(t *testing.T, what string, got *host.Tensor, want *tensorio.Array, tol float64) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: no output", what)
	}
	if len(got.Shape) != len(want.Shape) || len(got.Data) != len(want.Data) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape, want.Shape)
	}
	for i := range want.Shape {
		if got.Shape[i] != want.Shape[i] {
			t.Fatalf("%s: shape %v, want %v", what, got.Shape, want.Shape)
		}
	}
	worst := 0.0
	for i := range want.Data {
		worst = math.Max(worst, math.Abs(float64(got.Data[i]-want.Data[i])))
	}
	if worst > tol {
		t.Errorf("%s: differs from the reference by up to %g (tolerance %g)", what, worst, tol)
	}
}

// TestIRClassifierF16 runs a classifier whose weights are f16-compressed (Const f16 →
// Convert "decompression"), with a dynamic batch taken from --batch, MaxPool-8's unread
// indices, a depthwise GroupConvolution, exclude-pad pooling and a Reshape whose target
// comes from ShapeOf, against PyTorch at batch 2.
func TestIRClassifierF16(t *testing.T) {
	out := runIR(t, "classifier.xml", host.LoadOptions{Batch: 2}, nil, map[string]*tensorio.Array{"image": npy(t, "classifier_input.npy")})
	compare(t, "probs", out["probs"], npy(t, "classifier_probs.npy"), 2e-5)
}

// TestIRDetectorPriorBoxClustered runs an SSD-style head: location and confidence
// convolutions, Transpose, special_zero Reshapes, Softmax-8, and PriorBoxClustered over
// ShapeOf → StridedSlice of the feature map and the image, computed at load.
func TestIRDetectorPriorBoxClustered(t *testing.T) {
	out := runIR(t, "ssd_head.xml", host.LoadOptions{}, nil, map[string]*tensorio.Array{"data": npy(t, "ssd_head_input.npy")})
	compare(t, "mbox_loc", out["mbox_loc"], npy(t, "ssd_head_loc.npy"), 1e-4)
	compare(t, "mbox_conf", out["mbox_conf"], npy(t, "ssd_head_conf.npy"), 1e-5)
	compare(t, "mbox_priorbox", out["mbox_priorbox"], npy(t, "ssd_head_priors.npy"), 1e-6)
}

// TestIRCustomLayer binds the extension op ScaleShift to the CustomLayer of that type, its
// <data> attributes feeding the Defines and its Const inputs the Data buffers, next to a
// built-in ReLU.
func TestIRCustomLayer(t *testing.T) {
	out := runIR(t, "custom.xml", host.LoadOptions{}, []string{filepath.Join("testdata", "scaleshift", "scaleshift.xml")},
		map[string]*tensorio.Array{"x": npy(t, "custom_input.npy")})
	compare(t, "y", out["y"], npy(t, "custom_y.npy"), 1e-5)
}

// TestIRSegmenterOps chains the other mapped ops, each against PyTorch (PriorBox against
// the gen script's numpy version of its reference): ConvolutionBackpropData, PRelu with a
// per-channel slope, Interpolate-4 (scales, linear_onnx) and -11 (sizes, nearest), Pad-12,
// StridedSlice with masks, LRN, MVN-6, Split, VariadicSplit, Concat, Swish, HSigmoid,
// Subtract, Elu, Gelu-7, Unsqueeze, Squeeze, ReduceMax, NormalizeL2, ReduceSum, Divide and
// PriorBox.
func TestIRSegmenterOps(t *testing.T) {
	out := runIR(t, "segmenter.xml", host.LoadOptions{}, nil, map[string]*tensorio.Array{"x": npy(t, "segmenter_input.npy")})
	compare(t, "rows", out["rows"], npy(t, "segmenter_rows.npy"), 2e-5)
	compare(t, "mean", out["mean"], npy(t, "segmenter_mean.npy"), 2e-5)
	compare(t, "priors", out["priors"], npy(t, "segmenter_priors.npy"), 1e-6)
}

// TestIRSegmenterGlobalConfig runs the segmenter as `clhost run` does, with the global
// configuration, whose Swish replaces the built-in and reads beta as a parameter: the
// IR's Swish-4 gives beta as a constant input, which must reach the kernel all the same.
func TestIRSegmenterGlobalConfig(t *testing.T) {
	out := runIRWith(t, "segmenter.xml", host.LoadOptions{}, host.Options{Device: "cpu"}, map[string]*tensorio.Array{"x": npy(t, "segmenter_input.npy")})
	compare(t, "rows", out["rows"], npy(t, "segmenter_rows.npy"), 2e-5)
	compare(t, "mean", out["mean"], npy(t, "segmenter_mean.npy"), 2e-5)
}
