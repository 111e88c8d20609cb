package builtinkernels

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/clhost/clhost/cl"
	"github.com/clhost/clhost/internal/opspec"
)

// testEnv is the device every kernel test runs on: CLHOST_TEST_DEVICE (a cl.Select
// spec, "cpu" by default, e.g. "oclgrind" to run under the simulator).
type testEnv struct {
	ctx *cl.Context
	dev DeviceInfo
}

// simulated says whether the tests run on oclgrind's simulator (make check-kernels), where
// the heaviest cases run smaller shapes.
var simulated = os.Getenv("CLHOST_TEST_DEVICE") == "oclgrind"

var (
	envOnce sync.Once
	envVal  *testEnv
	envErr  error
	envNote string
)

func deviceEnv(t *testing.T) *testEnv { return deviceEnvB(t) }

// deviceEnvQueue is deviceEnv with an in-order queue of its own, released when the test
// ends.
func deviceEnvQueue(t *testing.T) (*testEnv, *cl.Queue) {
	t.Helper()
	env := deviceEnv(t)
	q, err := env.ctx.NewQueue(cl.QueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.Release)
	return env, q
}

// deviceEnvB is deviceEnv for tests and benchmarks alike.
func deviceEnvB(t testing.TB) *testEnv {
	t.Helper()
	envOnce.Do(func() {
		spec := os.Getenv("CLHOST_TEST_DEVICE")
		if spec == "" {
			spec = "cpu"
		}
		d, note, err := cl.Select(spec)
		if err != nil {
			envErr = fmt.Errorf("OpenCL device %q (install pocl-opencl-icd, or set CLHOST_TEST_DEVICE): %w", spec, err)
			return
		}
		ctx, err := cl.NewContext(d)
		if err != nil {
			envErr = err
			return
		}
		envVal = &testEnv{ctx: ctx, dev: DeviceInfoOf(d)}
		envNote = note
		switch {
		case simulated:
			// oclgrind checks private arrays' bounds in the code it runs; the optimizer's
			// merged indices read as overruns there, so it runs the code as written.
			testBuildOptions = "-cl-opt-disable"
			envNote += "; programs built with -cl-opt-disable, so that oclgrind checks the code as written"
		case quickBuilds && d.Platform != nil && strings.Contains(d.Platform.Name, "Portable Computing Language"):
			testBuildOptions = "-cl-opt-disable"
			envNote += "; programs built with -cl-opt-disable (CLHOST_TEST_OPTIMIZE=1 or CLHOST_TEST_FULL=1 builds them as clhost does)"
		}
	})
	if envErr != nil {
		t.Fatal(envErr)
	}
	t.Log(envNote)
	return envVal
}

// opCase is one layer instance of the harness. out is worked out by hand from the
// ONNX definitions, never taken from the code under test.
type opCase struct {
	name  string
	typ   string
	attrs Attrs
	in    [][]int
	out   [][]int
	// gen says how to fill each input: 'r' uniform [-1, 1] (the default), 'w' wide
	// [-5, 5] to reach the bends of activations, 'p' positive [0.5, 1.5] (variances),
	// 'n' magnitude [0.5, 1.5] of either sign (divisors), 'g' [1, 3] (acosh's domain),
	// 'i' whole numbers in [-300, 300] (casts, comparisons that must meet equal values),
	// 'b' 0 or 1 (conditions, booleans).
	gen string
	// omit lists inputs given as empty names (Conv without bias but with a residual): Plan
	// sees a nil shape and Reference a nil tensor there, as the runtime passes them.
	omit []int
}

func sh(dims ...int) []int { return dims }

func shapes(s ...[]int) [][]int { return s }

var opCases = []opCase{
	// Conv: pads given as [top, left, bottom, right]; out = (in + pads - dil·(k-1) - 1)/stride + 1.
	{name: "pad1_bias", typ: "Conv", attrs: Attrs{"pads": []int{1, 1, 1, 1}},
		in: shapes(sh(1, 3, 7, 5), sh(4, 3, 3, 3), sh(4)), out: shapes(sh(1, 4, 7, 5))},
	{name: "batch2_nopad_m5", typ: "Conv", attrs: Attrs{"kernel_shape": []int{3, 3}},
		in: shapes(sh(2, 3, 7, 5), sh(5, 3, 3, 3)), out: shapes(sh(2, 5, 5, 3))},
	{name: "asym_pads_strides", typ: "Conv", attrs: Attrs{"pads": []int{0, 1, 2, 0}, "strides": []int{2, 3}},
		in: shapes(sh(1, 2, 9, 7), sh(3, 2, 3, 2), sh(3)), out: shapes(sh(1, 3, 5, 3))},
	{name: "dilations", typ: "Conv", attrs: Attrs{"pads": []int{2, 1, 1, 3}, "dilations": []int{2, 3}},
		in: shapes(sh(1, 2, 8, 9), sh(2, 2, 3, 3)), out: shapes(sh(1, 2, 7, 7))},
	{name: "group2", typ: "Conv", attrs: Attrs{"group": 2, "pads": []int{1, 1, 1, 1}},
		in: shapes(sh(2, 4, 6, 5), sh(6, 2, 3, 3), sh(6)), out: shapes(sh(2, 6, 6, 5))},
	{name: "depthwise_stride2", typ: "Conv", attrs: Attrs{"group": 5, "pads": []int{1, 1, 1, 1}, "strides": []int{2, 2}},
		in: shapes(sh(1, 5, 7, 6), sh(5, 1, 3, 3), sh(5)), out: shapes(sh(1, 5, 4, 3))},
	{name: "depthwise_multiplier2", typ: "Conv", attrs: Attrs{"group": 3},
		in: shapes(sh(2, 3, 5, 5), sh(6, 1, 3, 3)), out: shapes(sh(2, 6, 3, 3))},
	{name: "same_upper_stride2", typ: "Conv", attrs: Attrs{"auto_pad": "SAME_UPPER", "strides": []int{2, 2}},
		in: shapes(sh(1, 2, 7, 5), sh(3, 2, 4, 4)), out: shapes(sh(1, 3, 4, 3))},
	{name: "same_lower", typ: "Conv", attrs: Attrs{"auto_pad": "SAME_LOWER"},
		in: shapes(sh(1, 2, 6, 5), sh(2, 2, 3, 2), sh(2)), out: shapes(sh(1, 2, 6, 5))},
	{name: "valid_strides", typ: "Conv", attrs: Attrs{"auto_pad": "VALID", "strides": []int{2, 1}},
		in: shapes(sh(1, 3, 7, 5), sh(2, 3, 2, 3)), out: shapes(sh(1, 2, 3, 3))},
	{name: "conv1d", typ: "Conv", attrs: Attrs{"pads": []int{2, 1}, "strides": []int{2}, "dilations": []int{2}},
		in: shapes(sh(2, 3, 11), sh(4, 3, 3)), out: shapes(sh(2, 4, 5))},
	{name: "pointwise", typ: "Conv",
		in: shapes(sh(2, 8, 5, 3), sh(7, 8, 1, 1), sh(7)), out: shapes(sh(2, 7, 5, 3))},
	{name: "one_channel_asym_stride2", typ: "Conv", attrs: Attrs{"pads": []int{1, 1, 0, 0}, "strides": []int{2, 2}},
		in: shapes(sh(1, 1, 6, 6), sh(4, 1, 3, 3)), out: shapes(sh(1, 4, 3, 3))},
	{name: "convpool_4x4_stride4", typ: "Conv", attrs: Attrs{"strides": []int{4, 4}},
		in: shapes(sh(1, 3, 16, 12), sh(10, 3, 4, 4), sh(10)), out: shapes(sh(1, 10, 4, 3))},

	// Conv with fused work (fused.go): y = act(conv + bias + residual).
	{name: "fused_relu", typ: "Conv", attrs: Attrs{"pads": []int{1, 1, 1, 1}, "clhost_activation": "Relu"},
		in: shapes(sh(1, 3, 7, 5), sh(4, 3, 3, 3), sh(4)), out: shapes(sh(1, 4, 7, 5))},
	{name: "fused_leaky_default_alpha", typ: "Conv", attrs: Attrs{"clhost_activation": "LeakyRelu"},
		in: shapes(sh(2, 3, 7, 5), sh(5, 3, 3, 3)), out: shapes(sh(2, 5, 5, 3))},
	{name: "fused_leaky_alpha0.2", typ: "Conv", attrs: Attrs{"pads": []int{1, 1, 1, 1}, "clhost_activation": "LeakyRelu", "clhost_alpha": 0.2},
		in: shapes(sh(1, 3, 7, 5), sh(4, 3, 3, 3), sh(4)), out: shapes(sh(1, 4, 7, 5))},
	{name: "fused_clip_min_max", typ: "Conv", attrs: Attrs{"pads": []int{1, 1, 1, 1}, "clhost_activation": "Clip", "clhost_min": -0.5, "clhost_max": 0.3},
		in: shapes(sh(1, 3, 7, 5), sh(4, 3, 3, 3), sh(4)), out: shapes(sh(1, 4, 7, 5))},
	{name: "fused_clip_relu6", typ: "Conv", attrs: Attrs{"clhost_activation": "Clip", "clhost_min": 0.0, "clhost_max": 6.0},
		in: shapes(sh(1, 4, 6, 6), sh(3, 4, 3, 3), sh(3)), out: shapes(sh(1, 3, 4, 4)), gen: "ww"},
	// No bounds: ±INFINITY in the program, the conv's values pass unchanged.
	{name: "fused_clip_unbounded", typ: "Conv", attrs: Attrs{"clhost_activation": "Clip"},
		in: shapes(sh(1, 2, 5, 5), sh(2, 2, 3, 3)), out: shapes(sh(1, 2, 3, 3))},
	{name: "fused_sigmoid", typ: "Conv", attrs: Attrs{"pads": []int{1, 1, 1, 1}, "clhost_activation": "Sigmoid"},
		in: shapes(sh(1, 3, 7, 5), sh(4, 3, 3, 3), sh(4)), out: shapes(sh(1, 4, 7, 5)), gen: "w"},
	{name: "fused_hardswish", typ: "Conv", attrs: Attrs{"pads": []int{1, 1, 1, 1}, "clhost_activation": "HardSwish"},
		in: shapes(sh(1, 3, 7, 5), sh(4, 3, 3, 3), sh(4)), out: shapes(sh(1, 4, 7, 5)), gen: "w"},
	{name: "fused_residual_bias", typ: "Conv", attrs: Attrs{"pads": []int{1, 1, 1, 1}},
		in: shapes(sh(1, 3, 7, 5), sh(4, 3, 3, 3), sh(4), sh(1, 4, 7, 5)), out: shapes(sh(1, 4, 7, 5))},
	{name: "fused_residual_bias_relu", typ: "Conv", attrs: Attrs{"pads": []int{1, 1, 1, 1}, "clhost_activation": "Relu"},
		in: shapes(sh(2, 3, 7, 5), sh(4, 3, 3, 3), sh(4), sh(2, 4, 7, 5)), out: shapes(sh(2, 4, 7, 5))},
	{name: "fused_residual_nobias", typ: "Conv", attrs: Attrs{"pads": []int{1, 1, 1, 1}},
		in: shapes(sh(1, 3, 7, 5), sh(4, 3, 3, 3), nil, sh(1, 4, 7, 5)), out: shapes(sh(1, 4, 7, 5)), omit: []int{2}},
	// A partial channel tile (M = 5, OCT = 4) and a partial pixel tile (OW = 3) with stride.
	{name: "fused_residual_nobias_relu_stride2", typ: "Conv", attrs: Attrs{"pads": []int{1, 1, 1, 1}, "strides": []int{2, 2}, "clhost_activation": "Relu"},
		in: shapes(sh(2, 3, 9, 6), sh(5, 3, 3, 3), nil, sh(2, 5, 5, 3)), out: shapes(sh(2, 5, 5, 3)), omit: []int{2}},
	{name: "fused_pointwise_residual_relu", typ: "Conv", attrs: Attrs{"clhost_activation": "Relu"},
		in: shapes(sh(2, 8, 5, 3), sh(8, 8, 1, 1), sh(8), sh(2, 8, 5, 3)), out: shapes(sh(2, 8, 5, 3))},
	{name: "fused_group2_residual_hardswish", typ: "Conv", attrs: Attrs{"group": 2, "pads": []int{1, 1, 1, 1}, "clhost_activation": "HardSwish"},
		in: shapes(sh(2, 4, 6, 5), sh(6, 2, 3, 3), sh(6), sh(2, 6, 6, 5)), out: shapes(sh(2, 6, 6, 5)), gen: "w"},
	{name: "fused_depthwise_relu6", typ: "Conv", attrs: Attrs{"group": 5, "pads": []int{1, 1, 1, 1}, "strides": []int{2, 2}, "clhost_activation": "Clip", "clhost_min": 0.0, "clhost_max": 6.0},
		in: shapes(sh(1, 5, 7, 6), sh(5, 1, 3, 3), sh(5)), out: shapes(sh(1, 5, 4, 3)), gen: "ww"},
	{name: "fused_depthwise_residual_leaky", typ: "Conv", attrs: Attrs{"group": 3, "pads": []int{1, 1, 1, 1}, "clhost_activation": "LeakyRelu", "clhost_alpha": 0.1},
		in: shapes(sh(2, 3, 5, 5), sh(6, 1, 3, 3), nil, sh(2, 6, 5, 5)), out: shapes(sh(2, 6, 5, 5)), omit: []int{2}},
	{name: "fused_depthwise_residual_sigmoid", typ: "Conv", attrs: Attrs{"group": 4, "clhost_activation": "Sigmoid"},
		in: shapes(sh(1, 4, 6, 6), sh(4, 1, 3, 3), sh(4), sh(1, 4, 4, 4)), out: shapes(sh(1, 4, 4, 4)), gen: "w"},
	// A fire module in one layer, the 1×1 expansion without an activation.
	{name: "fire", typ: opspec.FireType, attrs: Attrs{"pads": []int{1, 1, 1, 1}, opspec.SqueezeActivationAttr: opspec.ActRelu, opspec.FusedActivationAttr: opspec.ActRelu},
		in: shapes(sh(2, 5, 7, 9), sh(3, 5, 1, 1), sh(3), sh(4, 3, 1, 1), sh(4), sh(6, 3, 3, 3), sh(6)), out: shapes(sh(2, 10, 7, 9))},
	// 1×1 + depthwise in one layer: the tiled CPU kernel (or the two launches on a GPU)
	// with the 1×1 LeakyRelu, no depthwise bias, stride 2 and the depthwise Clip.
	{name: "pointwise_depthwise", typ: opspec.InvertedResidualType, attrs: Attrs{"group": 10, "pads": []int{1, 1, 1, 1}, "strides": []int{2, 2},
		opspec.ExpansionActivationAttr: opspec.ActLeakyRelu, opspec.ExpansionAlphaAttr: float32(0.2), opspec.FusedActivationAttr: opspec.ActClip, opspec.FusedMinAttr: float32(0), opspec.FusedMaxAttr: float32(6)},
		in: shapes(sh(2, 3, 7, 9), sh(10, 3, 1, 1), sh(10), sh(10, 1, 3, 3), nil), out: shapes(sh(2, 10, 4, 5)), omit: []int{4}, gen: "w"},
	{name: "fused_conv1d_residual_relu", typ: "Conv", attrs: Attrs{"pads": []int{1, 1}, "clhost_activation": "Relu"},
		in: shapes(sh(2, 3, 11), sh(4, 3, 3), sh(4), sh(2, 4, 11)), out: shapes(sh(2, 4, 11))},

	// Pools.
	{name: "k2s2", typ: "MaxPool", attrs: Attrs{"kernel_shape": []int{2, 2}, "strides": []int{2, 2}},
		in: shapes(sh(2, 3, 7, 5)), out: shapes(sh(2, 3, 3, 2))},
	{name: "k2s2_ceil", typ: "MaxPool", attrs: Attrs{"kernel_shape": []int{2, 2}, "strides": []int{2, 2}, "ceil_mode": 1},
		in: shapes(sh(2, 3, 7, 5)), out: shapes(sh(2, 3, 4, 3))},
	// ceil gives 3 windows per side, but the third would start in the end padding.
	{name: "ceil_drops_window_in_padding", typ: "MaxPool", attrs: Attrs{"kernel_shape": []int{2, 2}, "strides": []int{2, 2}, "pads": []int{0, 0, 1, 1}, "ceil_mode": 1},
		in: shapes(sh(1, 2, 4, 4)), out: shapes(sh(1, 2, 2, 2))},
	{name: "asym_pads_dilations", typ: "MaxPool", attrs: Attrs{"kernel_shape": []int{3, 3}, "pads": []int{1, 0, 2, 1}, "strides": []int{2, 2}, "dilations": []int{2, 1}},
		in: shapes(sh(1, 2, 9, 8)), out: shapes(sh(1, 2, 4, 4))},
	{name: "same_upper", typ: "MaxPool", attrs: Attrs{"kernel_shape": []int{3, 3}, "strides": []int{2, 2}, "auto_pad": "SAME_UPPER"},
		in: shapes(sh(1, 3, 7, 5)), out: shapes(sh(1, 3, 4, 3))},
	{name: "pool1d", typ: "MaxPool", attrs: Attrs{"kernel_shape": []int{3}, "strides": []int{2}, "pads": []int{1, 1}},
		in: shapes(sh(2, 3, 10)), out: shapes(sh(2, 3, 5))},
	{name: "k3s1", typ: "AveragePool", attrs: Attrs{"kernel_shape": []int{3, 3}},
		in: shapes(sh(2, 3, 7, 5)), out: shapes(sh(2, 3, 5, 3))},
	{name: "pads_exclude", typ: "AveragePool", attrs: Attrs{"kernel_shape": []int{3, 3}, "strides": []int{2, 2}, "pads": []int{1, 1, 1, 1}},
		in: shapes(sh(1, 2, 7, 5)), out: shapes(sh(1, 2, 4, 3))},
	{name: "pads_include", typ: "AveragePool", attrs: Attrs{"kernel_shape": []int{3, 3}, "strides": []int{2, 2}, "pads": []int{1, 1, 1, 1}, "count_include_pad": 1},
		in: shapes(sh(1, 2, 7, 5)), out: shapes(sh(1, 2, 4, 3))},
	// The last window covers input 5, end padding 6 and 7 past the padding: the divisor
	// counts 2 positions per side.
	{name: "ceil_include_pad", typ: "AveragePool", attrs: Attrs{"kernel_shape": []int{3, 3}, "strides": []int{2, 2}, "pads": []int{1, 1, 1, 1}, "ceil_mode": 1, "count_include_pad": 1},
		in: shapes(sh(1, 2, 6, 6)), out: shapes(sh(1, 2, 4, 4))},
	{name: "same_lower", typ: "AveragePool", attrs: Attrs{"kernel_shape": []int{2, 3}, "strides": []int{2, 2}, "auto_pad": "SAME_LOWER"},
		in: shapes(sh(1, 2, 5, 7)), out: shapes(sh(1, 2, 3, 4))},
	{name: "nchw", typ: "GlobalAveragePool", in: shapes(sh(2, 3, 7, 5)), out: shapes(sh(2, 3, 1, 1))},
	{name: "ncw", typ: "GlobalAveragePool", in: shapes(sh(2, 3, 11)), out: shapes(sh(2, 3, 1))},
	// Planes of 169, 49, 32 and 16: two accumulators of 16, the extra 16 and the tail.
	{name: "13x13", typ: "GlobalAveragePool", in: shapes(sh(2, 3, 13, 13)), out: shapes(sh(2, 3, 1, 1))},
	{name: "7x7", typ: "GlobalAveragePool", in: shapes(sh(1, 5, 7, 7)), out: shapes(sh(1, 5, 1, 1))},
	{name: "4x8", typ: "GlobalAveragePool", in: shapes(sh(1, 3, 4, 8)), out: shapes(sh(1, 3, 1, 1))},
	{name: "4x4", typ: "GlobalAveragePool", in: shapes(sh(2, 2, 4, 4)), out: shapes(sh(2, 2, 1, 1))},
	{name: "nchw", typ: "GlobalMaxPool", in: shapes(sh(1, 4, 3, 3)), out: shapes(sh(1, 4, 1, 1))},
	{name: "13x13", typ: "GlobalMaxPool", in: shapes(sh(2, 3, 13, 13)), out: shapes(sh(2, 3, 1, 1))},
	{name: "4x4", typ: "GlobalMaxPool", in: shapes(sh(1, 3, 4, 4)), out: shapes(sh(1, 3, 1, 1))},

	// Activations.
	{name: "4d", typ: "Relu", in: shapes(sh(2, 3, 7, 5)), out: shapes(sh(2, 3, 7, 5))},
	{name: "1d", typ: "Relu", in: shapes(sh(37)), out: shapes(sh(37))},
	{name: "default_alpha", typ: "LeakyRelu", in: shapes(sh(2, 3, 7, 5)), out: shapes(sh(2, 3, 7, 5))},
	{name: "alpha0.2", typ: "LeakyRelu", attrs: Attrs{"alpha": 0.2}, in: shapes(sh(3, 11)), out: shapes(sh(3, 11))},
	{name: "wide", typ: "Sigmoid", in: shapes(sh(2, 3, 7, 5)), out: shapes(sh(2, 3, 7, 5)), gen: "w"},
	{name: "wide", typ: "Tanh", in: shapes(sh(2, 3, 7, 5)), out: shapes(sh(2, 3, 7, 5)), gen: "w"},
	{name: "default", typ: "HardSigmoid", in: shapes(sh(2, 3, 7, 5)), out: shapes(sh(2, 3, 7, 5)), gen: "w"},
	{name: "alpha_beta", typ: "HardSigmoid", attrs: Attrs{"alpha": 0.3, "beta": 0.4}, in: shapes(sh(5, 7)), out: shapes(sh(5, 7)), gen: "w"},
	{name: "wide", typ: "HardSwish", in: shapes(sh(2, 3, 7, 5)), out: shapes(sh(2, 3, 7, 5)), gen: "w"},
	{name: "min_max", typ: "Clip", attrs: Attrs{"min": -0.5, "max": 0.3}, in: shapes(sh(2, 3, 7, 5)), out: shapes(sh(2, 3, 7, 5))},
	{name: "min_only", typ: "Clip", attrs: Attrs{"min": 0.0}, in: shapes(sh(4, 9)), out: shapes(sh(4, 9)), gen: "w"},
	{name: "relu6", typ: "Clip", attrs: Attrs{"min": 0.0, "max": 6.0}, in: shapes(sh(4, 9)), out: shapes(sh(4, 9)), gen: "w"},

	// Arithmetic with broadcasting.
	{name: "same_shape", typ: "Add", in: shapes(sh(2, 3, 7, 5), sh(2, 3, 7, 5)), out: shapes(sh(2, 3, 7, 5))},
	{name: "per_channel_c11", typ: "Add", in: shapes(sh(2, 3, 7, 5), sh(3, 1, 1)), out: shapes(sh(2, 3, 7, 5))},
	{name: "both_broadcast", typ: "Add", in: shapes(sh(2, 1, 5), sh(3, 1)), out: shapes(sh(2, 3, 5))},
	{name: "per_channel_1c11", typ: "Mul", in: shapes(sh(2, 3, 7, 5), sh(1, 3, 1, 1)), out: shapes(sh(2, 3, 7, 5))},
	{name: "interleaved", typ: "Mul", in: shapes(sh(4, 1, 3, 1), sh(1, 5, 1, 2)), out: shapes(sh(4, 5, 3, 2))},
	{name: "same_shape", typ: "Mul", in: shapes(sh(3, 7), sh(3, 7)), out: shapes(sh(3, 7))},
	{name: "scalar_1", typ: "Sub", in: shapes(sh(2, 3, 7, 5), sh(1)), out: shapes(sh(2, 3, 7, 5))},
	{name: "scalar_first", typ: "Sub", in: shapes(sh(1), sh(2, 3)), out: shapes(sh(2, 3))},
	{name: "same_shape", typ: "Sub", in: shapes(sh(3, 7), sh(3, 7)), out: shapes(sh(3, 7))},
	{name: "rank0_divisor", typ: "Div", in: shapes(sh(2, 3, 7, 5), sh()), out: shapes(sh(2, 3, 7, 5)), gen: "rn"},
	{name: "same_shape", typ: "Div", in: shapes(sh(3, 7), sh(3, 7)), out: shapes(sh(3, 7)), gen: "rn"},
	{name: "last_axis", typ: "Div", in: shapes(sh(2, 3, 5), sh(5)), out: shapes(sh(2, 3, 5)), gen: "rn"},

	{name: "nchw", typ: "BatchNormalization",
		in:  shapes(sh(2, 3, 7, 5), sh(3), sh(3), sh(3), sh(3)),
		out: shapes(sh(2, 3, 7, 5)), gen: "rrrrp"},
	{name: "nc_eps", typ: "BatchNormalization", attrs: Attrs{"epsilon": 1e-3},
		in:  shapes(sh(3, 4), sh(4), sh(4), sh(4), sh(4)),
		out: shapes(sh(3, 4)), gen: "rrrrp"},

	{name: "axis1_three", typ: "Concat", attrs: Attrs{"axis": 1},
		in: shapes(sh(2, 3, 4, 5), sh(2, 2, 4, 5), sh(2, 1, 4, 5)), out: shapes(sh(2, 6, 4, 5))},
	{name: "axis0", typ: "Concat", attrs: Attrs{"axis": 0},
		in: shapes(sh(1, 3, 2), sh(2, 3, 2)), out: shapes(sh(3, 3, 2))},
	{name: "axis_minus1", typ: "Concat", attrs: Attrs{"axis": -1},
		in: shapes(sh(2, 3, 4), sh(2, 3, 1)), out: shapes(sh(2, 3, 5))},
	{name: "single", typ: "Concat", attrs: Attrs{"axis": 2},
		in: shapes(sh(2, 3, 4)), out: shapes(sh(2, 3, 4))},

	{name: "default_axis", typ: "Flatten", in: shapes(sh(2, 3, 4, 5)), out: shapes(sh(2, 60))},
	{name: "axis0", typ: "Flatten", attrs: Attrs{"axis": 0}, in: shapes(sh(2, 3, 4, 5)), out: shapes(sh(1, 120))},
	{name: "axis_minus1", typ: "Flatten", attrs: Attrs{"axis": -1}, in: shapes(sh(2, 3, 4, 5)), out: shapes(sh(24, 5))},
	{name: "shape_input", typ: "Reshape", in: shapes(sh(2, 3, 4), sh(2)), out: shapes(sh(6, 4))},
	{name: "shape_attr", typ: "Reshape", attrs: Attrs{"shape": []int{0, -1}}, in: shapes(sh(2, 3, 4)), out: shapes(sh(2, 12))},
	{name: "4d", typ: "Identity", in: shapes(sh(2, 3, 7, 5)), out: shapes(sh(2, 3, 7, 5))},
	{name: "inference", typ: "Dropout", in: shapes(sh(2, 3, 7, 5), sh()), out: shapes(sh(2, 3, 7, 5))},

	{name: "bias_n", typ: "Gemm", in: shapes(sh(5, 7), sh(7, 3), sh(3)), out: shapes(sh(5, 3))},
	{name: "transA_alpha_beta_c_m1", typ: "Gemm", attrs: Attrs{"transA": 1, "alpha": 0.5, "beta": 2.0},
		in: shapes(sh(7, 5), sh(7, 3), sh(5, 1)), out: shapes(sh(5, 3))},
	{name: "transB_full_c", typ: "Gemm", attrs: Attrs{"transB": 1},
		in: shapes(sh(5, 7), sh(3, 7), sh(5, 3)), out: shapes(sh(5, 3))},
	{name: "both_trans_no_c", typ: "Gemm", attrs: Attrs{"transA": 1, "transB": 1},
		in: shapes(sh(7, 5), sh(3, 7)), out: shapes(sh(5, 3))},
	{name: "fc_batch1_scalar_c", typ: "Gemm", attrs: Attrs{"beta": 0.5},
		in: shapes(sh(1, 9), sh(9, 10), sh()), out: shapes(sh(1, 10))},
	{name: "fc_transB", typ: "Gemm", attrs: Attrs{"transB": 1},
		in: shapes(sh(3, 64), sh(10, 64), sh(10)), out: shapes(sh(3, 10))},
	// Gemm with a fused activation: y = act(alpha·A'·B' + beta·C).
	{name: "fused_relu", typ: "Gemm", attrs: Attrs{"clhost_activation": "Relu"},
		in: shapes(sh(5, 7), sh(7, 3), sh(3)), out: shapes(sh(5, 3))},
	{name: "fused_relu_transB_alpha_beta", typ: "Gemm", attrs: Attrs{"transB": 1, "alpha": 0.5, "beta": 2.0, "clhost_activation": "Relu"},
		in: shapes(sh(3, 64), sh(10, 64), sh(10)), out: shapes(sh(3, 10))},
	{name: "fused_leaky_no_c", typ: "Gemm", attrs: Attrs{"clhost_activation": "LeakyRelu", "clhost_alpha": 0.3},
		in: shapes(sh(6, 9), sh(9, 5)), out: shapes(sh(6, 5))},
	{name: "fused_clip", typ: "Gemm", attrs: Attrs{"clhost_activation": "Clip", "clhost_min": -0.2, "clhost_max": 0.4},
		in: shapes(sh(5, 7), sh(7, 3), sh(5, 3)), out: shapes(sh(5, 3))},
	{name: "fused_sigmoid", typ: "Gemm", attrs: Attrs{"clhost_activation": "Sigmoid"},
		in: shapes(sh(4, 8), sh(8, 6), sh(6)), out: shapes(sh(4, 6)), gen: "ww"},
	{name: "fused_hardswish", typ: "Gemm", attrs: Attrs{"clhost_activation": "HardSwish"},
		in: shapes(sh(4, 8), sh(8, 6), sh(6)), out: shapes(sh(4, 6)), gen: "ww"},
	{name: "2d", typ: "MatMul", in: shapes(sh(5, 7), sh(7, 3)), out: shapes(sh(5, 3))},
	{name: "batched_a", typ: "MatMul", in: shapes(sh(2, 5, 7), sh(7, 3)), out: shapes(sh(2, 5, 3))},
	{name: "broadcast_batches", typ: "MatMul", in: shapes(sh(2, 1, 5, 7), sh(3, 7, 4)), out: shapes(sh(2, 3, 5, 4))},
	{name: "vector_a", typ: "MatMul", in: shapes(sh(7), sh(2, 7, 3)), out: shapes(sh(2, 3))},
	{name: "vector_b", typ: "MatMul", in: shapes(sh(2, 5, 7), sh(7)), out: shapes(sh(2, 5))},
	{name: "linear_bias", typ: "MatMul", in: shapes(sh(2, 5, 7), sh(7, 3), sh(3)), out: shapes(sh(2, 5, 3))},
	{name: "batches_bias", typ: "MatMul", in: shapes(sh(2, 5, 7), sh(2, 7, 3), sh(3)), out: shapes(sh(2, 5, 3))},
	{name: "batches_scale", typ: "MatMul", attrs: Attrs{opspec.MatMulScaleAttr: float32(0.125)}, in: shapes(sh(2, 5, 7), sh(2, 7, 3)), out: shapes(sh(2, 5, 3))},
	{name: "linear_scale_bias", typ: "MatMul", attrs: Attrs{opspec.MatMulScaleAttr: float32(-0.5)}, in: shapes(sh(2, 5, 7), sh(7, 3), sh(3)), out: shapes(sh(2, 5, 3))},

	{name: "last_axis", typ: "Softmax", in: shapes(sh(2, 3, 7, 5)), out: shapes(sh(2, 3, 7, 5)), gen: "w"},
	{name: "axis1", typ: "Softmax", attrs: Attrs{"axis": 1}, in: shapes(sh(2, 3, 7, 5)), out: shapes(sh(2, 3, 7, 5)), gen: "w"},
	{name: "axis0", typ: "Softmax", attrs: Attrs{"axis": 0}, in: shapes(sh(4, 10)), out: shapes(sh(4, 10)), gen: "w"},
	{name: "axis_minus2", typ: "Softmax", attrs: Attrs{"axis": -2}, in: shapes(sh(3, 6, 4)), out: shapes(sh(3, 6, 4)), gen: "w"},
}

// Every pair of layouts, including a format to itself, plus a rank-3 tensor padded to
// B,F,Y,X.
func init() {
	formats := []string{"BFYX", "BYXF", "YXFB", "FYXB"}
	for _, from := range formats {
		for _, to := range formats {
			opCases = append(opCases, opCase{name: from + "_to_" + to, typ: ReorderType,
				attrs: Attrs{"from": from, "to": to}, in: shapes(sh(2, 3, 5, 7)), out: shapes(sh(2, 3, 5, 7))})
		}
	}
	opCases = append(opCases, opCase{name: "rank3_lowercase", typ: ReorderType,
		attrs: Attrs{"from": "bfyx", "to": "byxf"}, in: shapes(sh(2, 3, 4)), out: shapes(sh(2, 3, 4))})
}

func (c opCase) inputs() []*HostTensor {
	h := fnv.New64a()
	h.Write([]byte(c.typ + "/" + c.name))
	rng := rand.New(rand.NewPCG(h.Sum64(), 1))
	ts := make([]*HostTensor, len(c.in))
	for i, s := range c.in {
		if slices.Contains(c.omit, i) {
			continue
		}
		kind := byte('r')
		if i < len(c.gen) {
			kind = c.gen[i]
		}
		d := make([]float32, numel(s))
		for j := range d {
			u := rng.Float64()
			switch kind {
			case 'w':
				d[j] = float32(10*u - 5)
			case 'p':
				d[j] = float32(0.5 + u)
			case 'n':
				v := 0.5 + u
				if rng.IntN(2) == 0 {
					v = -v
				}
				d[j] = float32(v)
			case 'g':
				d[j] = float32(1 + 2*u)
			case 'i':
				d[j] = float32(math.Floor(601*u) - 300)
			case 'b':
				d[j] = float32(math.Floor(2 * u))
			default:
				d[j] = float32(2*u - 1)
			}
		}
		ts[i] = &HostTensor{Shape: cloneShape(s), Data: d}
	}
	return ts
}

// closeTo is the harness's tolerance: |got-want| ≤ 1e-4·max(1, |want|). NaN never
// passes, so an output element the kernel left unwritten (RunPlan fills with NaN) fails.
func closeTo(got, want float32) bool {
	if math.IsNaN(float64(got)) || math.IsNaN(float64(want)) {
		return false
	}
	if math.IsInf(float64(want), 0) {
		return got == want
	}
	d := math.Abs(float64(got) - float64(want))
	return d <= 1e-4*math.Max(1, math.Abs(float64(want)))
}

func compare(t testing.TB, what string, got, want *HostTensor) {
	t.Helper()
	if !sameShape(got.Shape, want.Shape) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape, want.Shape)
	}
	if len(got.Data) != len(want.Data) {
		t.Fatalf("%s: %d values, want %d", what, len(got.Data), len(want.Data))
	}
	bad := 0
	for i := range want.Data {
		if !closeTo(got.Data[i], want.Data[i]) {
			if bad < 5 {
				t.Errorf("%s: element %d (index %v): got %v, want %v", what, i, unravel(i, want.Shape), got.Data[i], want.Data[i])
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d elements differ", what, bad, len(want.Data))
	}
}

func unravel(i int, s []int) []int {
	idx := make([]int, len(s))
	for j := len(s) - 1; j >= 0; j-- {
		idx[j] = i % s[j]
		i /= s[j]
	}
	return idx
}

// checkLaunches holds a plan to what OpenCL accepts: 1 to 3 dimensions, local sizes that
// divide the global ones and fit the device's work-group limit.
func checkLaunches(t *testing.T, p *Plan, dev DeviceInfo) {
	t.Helper()
	for i, l := range p.Launches {
		if len(l.Global) < 1 || len(l.Global) > 3 {
			t.Errorf("launch %d: %d global dimensions", i, len(l.Global))
		}
		if l.Local == nil {
			continue
		}
		if len(l.Local) != len(l.Global) {
			t.Errorf("launch %d: local %v for global %v", i, l.Local, l.Global)
			continue
		}
		total := 1
		for d := range l.Local {
			if l.Local[d] < 1 || l.Global[d]%l.Local[d] != 0 {
				t.Errorf("launch %d: local %v does not divide global %v", i, l.Local, l.Global)
			}
			total *= l.Local[d]
		}
		if dev.MaxWorkGroupSize > 0 && total > dev.MaxWorkGroupSize {
			t.Errorf("launch %d: work-group of %d items, the device allows %d", i, total, dev.MaxWorkGroupSize)
		}
	}
}

// TestOpsMatchReference is the harness: every op on the device against its CPU
// reference over the case table, with the plans made for the device and, on a CPU, also
// with those a GPU would get (GPU kernels are plain OpenCL and run on a CPU too).
// CLHOST_TEST_CASES narrows it to cases whose "type/name" contains the given text (for
// slow simulators such as oclgrind).
func TestOpsMatchReference(t *testing.T) {
	t.Parallel()
	env := deviceEnv(t)
	filter := os.Getenv("CLHOST_TEST_CASES")
	targets := []struct {
		suffix string
		dev    DeviceInfo
	}{{"", env.dev}}
	if !env.dev.IsGPU && filter == "" {
		gpu := DeviceInfo{IsGPU: true, ComputeUnits: 8, MaxWorkGroupSize: 256, LocalMemBytes: env.dev.LocalMemBytes, FloatVectorWidth: 1}
		targets = append(targets, struct {
			suffix string
			dev    DeviceInfo
		}{"/gpu-plan", gpu})
	}
	// The GPU's plans run on every third case of each type (on all under make test-full):
	// TestConvGPUPlan and TestGemmTilesAllCorrect cover the GPU kernels' tiles.
	seen := map[string]int{}
	for _, c := range opCases {
		if filter != "" && !strings.Contains(c.typ+"/"+c.name, filter) {
			continue
		}
		k := seen[c.typ]
		seen[c.typ]++
		for ti, target := range targets {
			if ti > 0 && k%3 != 0 && !fullSweeps {
				continue
			}
			testOpCase(t, env, c, target.dev, c.typ+"/"+c.name+target.suffix)
		}
	}
}

// testOpCase runs one case of the table with plans made for dev.
func testOpCase(t *testing.T, env *testEnv, c opCase, dev DeviceInfo, name string) {
	t.Run(name, func(t *testing.T) {
		t.Parallel()
		runOpCase(t, env, c, dev)
	})
}

// runOpCase plans case c for dev, runs the plan on the test device against the op's
// reference, and returns the plan.
func runOpCase(t *testing.T, env *testEnv, c opCase, dev DeviceInfo) *Plan {
	t.Helper()
	op, ok := Lookup(c.typ)
	if !ok {
		t.Fatalf("%s: layer type %q is not registered", c.name, c.typ)
	}
	if si, ok := op.(ShapeInferrer); ok && !(c.typ == "Reshape" && !c.attrs.Has("shape")) {
		got, err := si.OutputShapes(c.attrs, c.in)
		if err != nil {
			t.Fatalf("%s %s: OutputShapes: %v", c.typ, c.name, err)
		}
		if err := checkOut(c.typ, got, c.out); err != nil {
			t.Fatalf("%s %s: OutputShapes %v, the table says %v", c.typ, c.name, got, c.out)
		}
	}
	plan, err := op.Plan(c.attrs, c.in, c.out, dev)
	if err != nil {
		t.Fatalf("%s %s: Plan: %v", c.typ, c.name, err)
	}
	checkLaunches(t, plan, dev)
	in := c.inputs()
	want, err := op.Reference(c.attrs, in, c.out)
	if err != nil {
		t.Fatalf("%s %s: Reference: %v", c.typ, c.name, err)
	}
	devIn := placeholders(t, plan, in, c.omit)
	q, err := env.ctx.NewQueue(cl.QueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Release()
	got, err := RunPlan(env.ctx, q, plan, devIn, c.out)
	if err != nil {
		t.Fatalf("%s %s: RunPlan: %v", c.typ, c.name, err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d outputs, reference has %d", len(got), len(want))
	}
	for i := range want {
		compare(t, fmt.Sprintf("%s %s output %d", c.typ, c.name, i), got[i], want[i])
	}
	return plan
}

// placeholders gives RunPlan a tensor in every slot: an omitted input gets a NaN
// placeholder, which the plan must not bind (the runtime refuses that).
func placeholders(t *testing.T, plan *Plan, in []*HostTensor, omit []int) []*HostTensor {
	t.Helper()
	devIn := slices.Clone(in)
	for _, i := range omit {
		devIn[i] = &HostTensor{Shape: sh(1), Data: []float32{float32(math.NaN())}}
		for _, l := range append(slices.Clone(plan.Setup), plan.Launches...) {
			for _, a := range l.Args {
				if a.Kind == ArgInput && a.Index == i {
					t.Errorf("kernel %s binds omitted input %d", l.Kernel, i)
				}
			}
		}
	}
	return devIn
}
