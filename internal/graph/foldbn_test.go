package graph_test

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/clhost/clhost/builtin_kernels"
	"github.com/clhost/clhost/internal/graph"
	"github.com/clhost/clhost/internal/opspec"
	"github.com/clhost/clhost/model"
)

// convBNModel builds x → Conv(W[, B]) → BatchNormalization per entry of convs, all on
// one input, with random weights and statistics (variances positive), its shapes
// inferred.
func convBNModel(t *testing.T, rng *rand.Rand, bias bool, shareW bool, convs int) *model.Model {
	vals := func(n int, lo, hi float32) []byte {
		vs := make([]float32, n)
		for i := range vs {
			vs[i] = lo + (hi-lo)*rng.Float32()
		}
		return model.Float32Bytes(vs)
	}
	m := &model.Model{Name: "convbn", Inputs: []string{"x"}}
	m.Tensors = append(m.Tensors, model.Tensor{Name: "x", Type: model.Float32, Shape: []int{2, 4, 5, 6}})
	for k := 0; k < convs; k++ {
		s := string(rune('a' + k))
		w := "W" + s
		if shareW {
			w = "W"
		}
		if m.Tensor(w) == nil {
			m.Tensors = append(m.Tensors, model.Tensor{Name: w, Type: model.Float32, Shape: []int{6, 2, 3, 2}, Data: vals(72, -1, 1)})
		}
		conv := model.Layer{Name: "conv" + s, Type: "Conv", Inputs: []string{"x", w}, Outputs: []string{"c" + s},
			Attrs: []model.Attr{model.IntsAttr("pads", 1, 0, 1, 1), model.IntsAttr("strides", 1, 2), model.IntAttr("group", 2), model.IntsAttr("dilations", 2, 1)}}
		if bias {
			m.Tensors = append(m.Tensors, model.Tensor{Name: "B" + s, Type: model.Float32, Shape: []int{6}, Data: vals(6, -1, 1)})
			conv.Inputs = append(conv.Inputs, "B"+s)
		}
		bn := model.Layer{Name: "bn" + s, Type: "BatchNormalization", Outputs: []string{"y" + s},
			Attrs: []model.Attr{model.FloatAttr("epsilon", 1e-2)}, Inputs: []string{"c" + s}}
		for _, p := range []struct {
			name   string
			lo, hi float32
		}{{"scale", -2, 2}, {"beta", -1, 1}, {"mean", -1, 1}, {"var", 0.05, 3}} {
			m.Tensors = append(m.Tensors, model.Tensor{Name: p.name + s, Type: model.Float32, Shape: []int{6}, Data: vals(6, p.lo, p.hi)})
			bn.Inputs = append(bn.Inputs, p.name+s)
		}
		// The Conv's output declared with its shape, as imported models have it.
		m.Tensors = append(m.Tensors, model.Tensor{Name: "c" + s, Type: model.Float32, Shape: []int{2, 6, 3, 3}})
		m.Layers = append(m.Layers, conv, bn)
		m.Outputs = append(m.Outputs, "y"+s)
	}
	if err := graph.InferShapes(m); err != nil {
		t.Fatal(err)
	}
	return m
}

// Folding keeps the outputs of Conv → BatchNormalization, by the built-in layers' CPU
// references within compareOutputs' tolerance, and leaves one Conv per pair.
func TestFoldBatchNormNumeric(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 1))
	for _, c := range []struct {
		name          string
		bias, shareW  bool
		convs, folded int
	}{
		{"with bias", true, false, 1, 1},
		{"without bias", false, false, 1, 1},
		{"shared weights", true, true, 2, 2},
		{"shared weights, no bias", false, true, 3, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := convBNModel(t, rng, c.bias, c.shareW, c.convs)
			in := randomInputs(m, 2)
			want := runReference(t, m, in)
			if n := graph.FoldBatchNorm(m); n != c.folded {
				t.Fatalf("folded %d, want %d", n, c.folded)
			}
			if err := model.Validate(m); err != nil {
				t.Fatalf("folded model: %v", err)
			}
			if len(m.Layers) != c.convs {
				t.Errorf("%d layers, want %d", len(m.Layers), c.convs)
			}
			got := runReference(t, m, in)
			values := func(out map[string]*builtinkernels.HostTensor) func(string) ([]int, []float32) {
				return func(name string) ([]int, []float32) { return out[name].Shape, out[name].Data }
			}
			compareOutputs(t, c.name, m.Outputs, values(got), values(want))
			// Nothing but the last reader may change shared weights in place: every
			// other Conv got its own copy, so the model keeps one W per Conv at most.
			if c.shareW {
				ws := map[string]bool{}
				for _, l := range m.Layers {
					ws[l.Inputs[1]] = true
				}
				if len(ws) != c.convs {
					t.Errorf("the Convs read weights %v; each should have its own", ws)
				}
			}
			if m.Tensor("ca") != nil || m.Tensor("scalea") != nil || m.Tensor("vara") != nil {
				t.Error("the Conv's old output or the statistics are still in the model")
			}
		})
	}
}

func TestFoldBatchNormLeavesOthers(t *testing.T) {
	cases := map[string]func(m *model.Model){
		"conv output is a graph output": func(m *model.Model) { m.Outputs = append(m.Outputs, "ca") },
		"conv output read twice": func(m *model.Model) {
			m.Layers = append(m.Layers, model.Layer{Name: "r", Type: "Relu", Inputs: []string{"ca"}, Outputs: []string{"r"}})
			m.Outputs = append(m.Outputs, "r")
		},
		"statistics computed": func(m *model.Model) {
			m.Tensor("meana").Data = nil
			m.Inputs = append(m.Inputs, "meana")
		},
		"weights computed": func(m *model.Model) {
			m.Tensor("Wa").Data = nil
			m.Inputs = append(m.Inputs, "Wa")
		},
		"training mode": func(m *model.Model) { m.Layers[1].Attrs = append(m.Layers[1].Attrs, model.IntAttr("training_mode", 1)) },
		"custom conv": func(m *model.Model) {
			m.Layers[0].Attrs = append(m.Layers[0].Attrs, model.Attr{Name: "domain", Kind: model.AttrString, Str: "x"})
		},
		"float16 scale":  func(m *model.Model) { s := m.Tensor("scalea"); s.Type, s.Data = model.Float16, s.Data[:12] },
		"bias too short": func(m *model.Model) { b := m.Tensor("Ba"); b.Shape, b.Data = []int{5}, b.Data[:20] },
		"not after conv": func(m *model.Model) { m.Layers[0].Type = "Relu" },
		// Fuse has run: the fold would change what the activation sees.
		"conv with an activation": func(m *model.Model) {
			m.Layers[0].Attrs = append(m.Layers[0].Attrs, model.StringAttr(opspec.FusedActivationAttr, opspec.ActRelu))
		},
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			build := func() *model.Model {
				m := convBNModel(t, rand.New(rand.NewPCG(3, 4)), true, false, 1)
				change(m)
				return m
			}
			m, orig := build(), build()
			if n := graph.FoldBatchNorm(m); n != 0 {
				t.Fatalf("folded %d", n)
			}
			if !reflect.DeepEqual(m, orig) {
				t.Error("the model changed though nothing was folded")
			}
		})
	}
}
