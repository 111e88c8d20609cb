package host

// Tests of the sanitizer (sanitize.go) on the OpenCL CPU device: one kernel per class of
// fault, each of which must be reported with the layer, the kernel, the XML file:line and
// the work sizes; a correct kernel, and the kernels of the samples, the global
// configuration and the other tests, must report nothing.

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/clhost/clhost/configs"
	"github.com/clhost/clhost/model"
)

// sanChain is x → Relu → custom layer of type typ → Relu, so that the custom layer's
// tensors lie inside the network's memory rather than at its edges: the main inference
// runs a faulty kernel unguarded.
func sanChain(t testing.TB, typ string, shape []int, attrs ...model.Attr) *model.Model {
	t.Helper()
	b := model.NewBuilder("san-" + typ)
	x := b.Input("x", model.Float32, shape...)
	r0 := b.Layer("Relu", "r0", []string{x})
	c := b.Tensor("c", model.Float32, shape...)
	b.LayerOutputs(typ, "c1", []string{r0}, []string{c}, attrs...)
	b.Output(b.Layer("Relu", "r2", []string{c}))
	return ctBuild(t, b)
}

// sanitize compiles m with the configurations, runs the sanitizer on a seeded input of
// each graph input and returns the findings.
func sanitize(t *testing.T, m *model.Model, opts Options) []Finding {
	t.Helper()
	opts.KeepIntermediates = true
	n, _ := ctCompile(t, opts, m)
	in := map[string]*Tensor{}
	for i, ti := range n.Inputs() {
		in[ti.Name] = ctRand(uint64(90+i), ti.Shape...)
	}
	r, _, err := n.Check(context.Background(), in, CheckOptions{Sanitize: true, NoReferences: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range r.Layers {
		if l.Custom && !l.Sanitized {
			t.Errorf("custom layer %s was not sanitized", l.Layer)
		}
	}
	return r.Findings()
}

func TestSanitizerFindsFaults(t *testing.T) {
	ctParallel(t)
	shape := []int{1, 4, 8, 8} // 256 elements, 1,024 bytes
	cfg := Options{NoGlobalConfig: true, Configs: []string{ctPath(t, "../sanitize/faults.xml")}}
	cases := []struct {
		typ, entry string
		line       int
		kinds      []FindingKind // any one of them
		want       []string
	}{
		{"Twice", "twice", 3, nil, nil},
		{"Skips", "skips", 12, []FindingKind{Unwritten}, []string{"64 of 256 elements of output 0 never written; first [0,0,0,3]"}},
		{"PastEnd", "past_end", 21, []FindingKind{OutOfBounds}, []string{"wrote 64 bytes past the end of output 0"}},
		{"BeforeStart", "before_start", 30, []FindingKind{OutOfBounds}, []string{"wrote 8 bytes before the start of output 0"}},
		{"Neighbour", "neighbour", 39, []FindingKind{Nondeterministic, ReadsUnwritten}, nil},
		{"WritesInput", "writes_input", 48, []FindingKind{InputWritten}, []string{"wrote into its input 0: 256 of 256 elements changed; first [0,0,0,0]"}},
		{"ReadsPast", "reads_past", 57, []FindingKind{ReadsUnwritten}, []string{"reads past the end (or before the start) of a buffer"}},
		// Two stray words 32 KB before a 1 KB output: farther than a guard as large as
		// the tensor, within the sanitizer's smallest guard.
		{"FarBefore", "far_before", 75, []FindingKind{OutOfBounds}, []string{"wrote 8 bytes as far as 32,768 bytes before the start of output 0"}},
	}
	for _, c := range cases {
		t.Run(c.typ, func(t *testing.T) {
			found := sanitize(t, sanChain(t, c.typ, shape), cfg)
			if c.kinds == nil {
				if len(found) > 0 {
					t.Fatalf("a correct kernel has findings: %v", found)
				}
				return
			}
			var hit *Finding
			for i, f := range found {
				for _, k := range c.kinds {
					if f.Kind == k && hit == nil {
						hit = &found[i]
					}
				}
			}
			if hit == nil {
				t.Fatalf("no finding of kind %v; findings: %v", c.kinds, found)
			}
			s := hit.String()
			ctContains(t, "the finding", s, append([]string{"c1: ", fmt.Sprintf("(kernel %s, ", c.entry),
				fmt.Sprintf("faults.xml:%d, ", c.line), "global 256, local chosen by the driver)"}, c.want...)...)
			if hit.Layer != "c1" || hit.Type != c.typ || len(hit.Global) != 1 || hit.Global[0] != 256 {
				t.Errorf("finding fields %+v", *hit)
			}
		})
	}
}

// TestSanitizerNoFalseAlarms runs the sanitizer over correct kernels: the global
// configuration's, the samples' and those of the custom-layer tests, with the shapes and
// parameters those tests use (so the programs are the ones they build).
func TestSanitizerNoFalseAlarms(t *testing.T) {
	t.Setenv(configs.EnvDir, "")
	one := func(typ string, in, out []int, attrs ...model.Attr) *model.Model {
		return ctOneLayer(t, typ, in, out, attrs...)
	}
	cases := []struct {
		name    string
		configs []string
		global  bool
		m       *model.Model
	}{
		{"GRN", nil, true, one("GRN", []int{2, 4, 3, 5}, []int{2, 4, 3, 5}, model.FloatAttr("bias", 0.5))},
		{"Swish", nil, true, one("Swish", []int{1, 3, 4, 4}, []int{1, 3, 4, 4}, model.FloatAttr("beta", 1.5))},
		{"Tile", nil, true, one("Tile", []int{1, 2, 2, 3}, []int{2, 4, 4, 6})},
		{"AffineAny", []string{ctPath(t, "any.xml")}, false, sanChain(t, "AffineAny", []int{2, 3, 4, 5}, model.FloatAttr("alpha", 1.5), model.FloatAttr("beta", -0.5))},
		{"ChannelAffine", []string{ctPath(t, "arrays.xml")}, false, one("ChannelAffine", []int{2, 3, 2, 4}, []int{2, 3, 2, 4},
			model.FloatsAttr("weights", 0.1, -1.25, 3.3), model.IntsAttr("offsets", 1, -2, 300))},
		{"BYXF", []string{ctPath(t, "byxf.xml")}, false, byxfChain(t)},
		{"SplitSign", []string{ctPath(t, "two_outputs.xml")}, false, splitSignModel(t)},
		{"ScaleShift data", []string{ctPath(t, "data.xml")}, false, scaleShiftModel(t)},
		{"custom_layers sample", []string{"../samples/custom_layers/custom_layers.xml"}, false, customLayersSample(t)},
		{"custom_relu sample", []string{"../samples/custom_relu/custom_layer_example.xml"}, false,
			one("ReLU", []int{2, 3, 5, 7}, []int{2, 3, 5, 7}, model.FloatAttr("negative_slope", 0.1))},
		{"onnx_custom_op sample", []string{"../samples/onnx_custom_op/hardswish.xml"}, false,
			one("HardSwishX", []int{1, 8, 24, 32}, []int{1, 8, 24, 32}, model.FloatAttr("alpha", 1.0/6), model.FloatAttr("beta", 0.5))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			found := sanitize(t, c.m, Options{NoGlobalConfig: !c.global, Configs: c.configs})
			if len(found) > 0 {
				var s []string
				for _, f := range found {
					s = append(s, f.String())
				}
				t.Errorf("findings on a correct kernel:\n%s", strings.Join(s, "\n"))
			}
		})
	}
}

// byxfChain is TestCustomFormatBYXFReorders' model: BYXF in and out, with reorders.
func byxfChain(t testing.TB) *model.Model {
	shape := []int{2, 3, 4, 5}
	b := model.NewBuilder("byxf")
	x := b.Input("x", model.Float32, shape...)
	s1 := b.Tensor("s1", model.Float32, shape...)
	b.LayerOutputs("ChanScaleBYXF", "s1", []string{x}, []string{s1})
	s2 := b.Tensor("s2", model.Float32, shape...)
	b.LayerOutputs("ChanScaleMixed", "s2", []string{s1}, []string{s2})
	b.Output(b.Layer("Sigmoid", "sig", []string{s2}))
	return ctBuild(t, b)
}

// splitSignModel is TestCustomTwoOutputs' model: two outputs bound out of port order.
func splitSignModel(t testing.TB) *model.Model {
	shape := []int{1, 2, 3, 4}
	b := model.NewBuilder("two")
	x := b.Input("x", model.Float32, shape...)
	pos := b.Tensor("pos", model.Float32, shape...)
	neg := b.Tensor("neg", model.Float32, shape...)
	b.LayerOutputs("SplitSign", "split", []string{x}, []string{pos, neg})
	b.Output(pos, neg)
	return ctBuild(t, b)
}

// scaleShiftModel binds two Data blobs by their names' last parts.
func scaleShiftModel(t testing.TB) *model.Model {
	shape := []int{1, 4, 3, 5}
	b := model.NewBuilder("data")
	x := b.Input("x", model.Float32, shape...)
	y := b.Tensor("y", model.Float32, shape...)
	b.LayerOutputs("ScaleShift", "ss1", []string{x,
		b.ConstFloat32("block1.scale", []int{4}, ctRandSlice(10, 4, -1.5, 1.5)),
		b.ConstFloat32("shift", []int{4}, ctRandSlice(11, 4, -1.5, 1.5))}, []string{y})
	b.Output(y)
	return ctBuild(t, b)
}

// customLayersSample has samples/custom_layers' two custom layers with its shapes:
// ScaleShift with Data blobs on 1×8×16×16, ChannelMix with list parameters to 1×4×8×8.
func customLayersSample(t testing.TB) *model.Model {
	b := model.NewBuilder("custom_layers")
	x := b.Input("x", model.Float32, 1, 8, 16, 16)
	s := b.Tensor("block1", model.Float32, 1, 8, 16, 16)
	b.LayerOutputs("ScaleShift", "block1", []string{x,
		b.ConstFloat32("block1.scale", []int{8}, ctRandSlice(30, 8, 0.5, 2)),
		b.ConstFloat32("block1.shift", []int{8}, ctRandSlice(31, 8, -0.5, 0.5))}, []string{s})
	p := b.Layer("MaxPool", "pool1", []string{s}, model.IntsAttr("kernel_shape", 2, 2), model.IntsAttr("strides", 2, 2))
	mix := b.Tensor("mix1", model.Float32, 1, 4, 8, 8)
	b.LayerOutputs("ChannelMix", "mix1", []string{p}, []string{mix},
		model.IntsAttr("perm", 7, 0, 3, 5), model.FloatsAttr("gain", 0.5, -1, 2, 0.25))
	b.Output(mix)
	return ctBuild(t, b)
}

// TestCheckNotesWrittenInputs: when a custom layer writes into its input, the layer that
// produced that input fails its own check in the inference; the report says why.
func TestCheckNotesWrittenInputs(t *testing.T) {
	ctParallel(t)
	n, _ := ctCompile(t, Options{NoGlobalConfig: true, Configs: []string{ctPath(t, "../sanitize/faults.xml")}, KeepIntermediates: true},
		sanChain(t, "WritesInput", []int{1, 4, 8, 8}))
	r, _, err := n.Check(context.Background(), map[string]*Tensor{"x": ctRand(96, 1, 4, 8, 8)}, CheckOptions{Sanitize: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range r.Layers {
		if l.Layer != "r0" {
			continue
		}
		if len(l.Notes) != 1 || !strings.Contains(l.Notes[0], "c1 writes into its output r0") {
			t.Errorf("r0's notes %q", l.Notes)
		}
	}
	var b strings.Builder
	if err := r.Write(&b); err != nil {
		t.Fatal(err)
	}
	ctContains(t, "the report", b.String(), "c1 writes into its output r0 (sanitizer, below)", "wrote into its input 0")
}
