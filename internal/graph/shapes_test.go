package graph

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	builtinkernels "github.com/clhost/clhost/builtin_kernels"
	"github.com/clhost/clhost/model"
)

func ints(name string, v ...int64) model.Attr { return model.IntsAttr(name, v...) }
func i64(name string, v int64) model.Attr     { return model.IntAttr(name, v) }

// TestOutputShapes checks what the graph adds to the ops' shape rules: errors name the
// layer, and the rule's shapes must match the layer's outputs. The rules' own cases are
// builtin_kernels' TestShapeRules.
func TestOutputShapes(t *testing.T) {
	l := &model.Layer{Name: "L", Type: "BatchNormalization", Inputs: []string{"x", "s", "b", "m", "v"}, Outputs: []string{"y"}}
	in := [][]int{{2, 3, 4, 4}, {3}, {3}, {3}, {3}}
	got, err := OutputShapes(l, in)
	if err != nil || fmt.Sprint(got) != "[[2 3 4 4]]" {
		t.Fatalf("got %v, %v", got, err)
	}
	in[3] = []int{4}
	if _, err := OutputShapes(l, in); err == nil || !strings.HasPrefix(err.Error(), `layer "L" (BatchNormalization): mean (input 3)`) {
		t.Errorf("a bad input: %v", err)
	}
	if _, err := OutputShapes(l, in[:4]); err == nil || !strings.Contains(err.Error(), "4 input shapes") {
		t.Errorf("too few shapes: %v", err)
	}
}

// TestShapeTypesAreTheRegistry: the graph's shape inference is the ops' own, so every
// registered op has it, and nothing else does.
func TestShapeTypesAreTheRegistry(t *testing.T) {
	if got, want := fmt.Sprint(ShapeTypes()), fmt.Sprint(builtinkernels.Types()); got != want {
		t.Errorf("ShapeTypes %s, registry %s", got, want)
	}
}

func TestUnknownTypeHasNoShapeFunc(t *testing.T) {
	_, err := OutputShapes(&model.Layer{Name: "g", Type: "GRN", Inputs: []string{"x"}, Outputs: []string{"y"}}, [][]int{{1}})
	if !errors.Is(err, ErrNoShapeFunc) || !strings.Contains(err.Error(), `layer "g" (GRN)`) {
		t.Fatalf("got %v", err)
	}
	if HasShape("GRN") || !HasShape("Conv") {
		t.Fatal("HasShape")
	}
}

// convpool is OCL-ENGINE's benchmark model without declared intermediate shapes.
func convpool(t *testing.T) *model.Model {
	b := model.NewBuilder("convpool")
	x := b.Input("data", model.Float32, 1, 3, 416, 416)
	w := b.ConstFloat32("conv1.weight", []int{10, 3, 4, 4}, make([]float32, 480))
	bias := b.ConstFloat32("conv1.bias", []int{10}, make([]float32, 10))
	c := b.Layer("Conv", "conv1", []string{x, w, bias}, ints("kernel_shape", 4, 4), ints("strides", 4, 4))
	p := b.Layer("MaxPool", "pool1", []string{c}, ints("kernel_shape", 2, 2), ints("strides", 2, 2))
	b.Output(p)
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestInferShapes(t *testing.T) {
	m := convpool(t)
	if err := InferShapes(m); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]int{"conv1": {1, 10, 104, 104}, "pool1": {1, 10, 52, 52}} {
		tt := m.Tensor(name)
		if tt == nil || tt.Type != model.Float32 || fmt.Sprint(tt.Shape) != fmt.Sprint(want) || tt.IsConst() {
			t.Errorf("%s: %+v, want float32 %v", name, tt, want)
		}
	}
	// Running again finds the shapes declared and agreeing.
	n := len(m.Tensors)
	if err := InferShapes(m); err != nil || len(m.Tensors) != n {
		t.Fatalf("second run: %v, %d tensors (was %d)", err, len(m.Tensors), n)
	}
	if err := model.Validate(m); err != nil {
		t.Fatal(err)
	}
}

func TestInferShapesChain(t *testing.T) {
	// Conv (pads 1) → Relu → MaxPool with indices → Flatten → Gemm → Softmax, plus a custom
	// layer whose output is declared.
	b := model.NewBuilder("chain")
	x := b.Input("x", model.Float32, 1, 1, 4, 4)
	w := b.ConstFloat32("w", []int{2, 1, 3, 3}, make([]float32, 18))
	c := b.Layer("Conv", "conv", []string{x, w}, ints("pads", 1, 1, 1, 1)) // [1 2 4 4]
	r := b.Layer("Relu", "relu", []string{c})
	p := b.LayerOutputs("MaxPool", "pool", []string{r}, []string{"pool", "idx"}, ints("kernel_shape", 2, 2), ints("strides", 2, 2)) // [1 2 2 2]
	f := b.Layer("Flatten", "flat", []string{p[0]})                                                                                 // [1 8]
	fc := b.ConstFloat32("fc", []int{10, 8}, make([]float32, 80))
	g := b.Layer("Gemm", "gemm", []string{f, fc}, i64("transB", 1)) // [1 10]
	s := b.Layer("Softmax", "prob", []string{g})
	u := b.Layer("GRN", "custom", []string{s})
	b.Tensor(u, model.Float16, 10)
	b.Output(u, p[1])
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if err := InferShapes(m); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"conv": "float32 [1 2 4 4]", "relu": "float32 [1 2 4 4]", "pool": "float32 [1 2 2 2]", "idx": "int64 [1 2 2 2]",
		"flat": "float32 [1 8]", "gemm": "float32 [1 10]", "prob": "float32 [1 10]", "custom": "float16 [10]",
	}
	for name, w := range want {
		tt := m.Tensor(name)
		if tt == nil || fmt.Sprint(tt.Type, " ", tt.Shape) != w {
			t.Errorf("%s: %+v, want %s", name, tt, w)
		}
	}
}

func TestInferShapesErrors(t *testing.T) {
	base := func(declare func(b *model.Builder), typ string) *model.Model {
		b := model.NewBuilder("m")
		x := b.Input("x", model.Float32, 1, 3, 8, 8)
		r := b.Layer("Relu", "relu", []string{x})
		y := b.Layer(typ, "last", []string{r})
		declare(b)
		b.Output(y)
		m, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	cases := []struct {
		name string
		m    *model.Model
		want string
	}{
		{"undeclared custom output", base(func(*model.Builder) {}, "GRN"),
			`model "m": layer "last" (GRN): output "last" has no declared shape, and clhost cannot infer one for type GRN: a custom layer's outputs must be declared in the model`},
		{"declared shape differs", base(func(b *model.Builder) { b.Tensor("relu", model.Float32, 1, 3, 8, 9) }, "Sigmoid"),
			`model "m": layer "relu" (Relu): output "relu" is declared as float32 [1 3 8 9], but the layer computes float32 [1 3 8 8]`},
		{"declared type differs", base(func(b *model.Builder) { b.Tensor("last", model.Int8, 1, 3, 8, 8) }, "Sigmoid"),
			`layer "last" (Sigmoid): output "last" is declared as int8 [1 3 8 8], but the layer computes float32 [1 3 8 8]`},
		{"shape rule fails", base(func(*model.Builder) {}, "Flatten"), ""},
		{"bad layer", base(func(*model.Builder) {}, "MaxPool"), `model "m": layer "last" (MaxPool): attribute kernel_shape is required`},
	}
	for _, c := range cases {
		n := len(c.m.Tensors)
		err := InferShapes(c.m)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v\nwant %s", c.name, err, c.want)
		}
		if len(c.m.Tensors) != n {
			t.Errorf("%s: a failed inference changed the model", c.name)
		}
	}
}
