package onnx

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sbinet/npyio/npy"

	"github.com/clhost/clhost/internal/graph"
	"github.com/clhost/clhost/model"
)

// convRef is a direct NCHW convolution with ONNX Conv's pads, strides, dilations and
// group (explicit pads only), in float64.
func convRef(x []float32, xs []int, w []float32, ws []int, b []float32, l *model.Layer) ([]float32, []int) {
	n, c, h, wd := xs[0], xs[1], xs[2], xs[3]
	m, cg, kh, kw := ws[0], ws[1], ws[2], ws[3]
	group := int(l.Int("group", 1))
	pads := l.Ints("pads", []int64{0, 0, 0, 0})
	strides := l.Ints("strides", []int64{1, 1})
	dil := l.Ints("dilations", []int64{1, 1})
	oh := (h+int(pads[0]+pads[2])-int(dil[0])*(kh-1)-1)/int(strides[0]) + 1
	ow := (wd+int(pads[1]+pads[3])-int(dil[1])*(kw-1)-1)/int(strides[1]) + 1
	out := make([]float32, n*m*oh*ow)
	for bi := 0; bi < n; bi++ {
		for o := 0; o < m; o++ {
			g := o / (m / group)
			for i := 0; i < oh; i++ {
				for j := 0; j < ow; j++ {
					sum := 0.0
					if b != nil {
						sum = float64(b[o])
					}
					for ci := 0; ci < cg; ci++ {
						for u := 0; u < kh; u++ {
							for v := 0; v < kw; v++ {
								y := i*int(strides[0]) - int(pads[0]) + u*int(dil[0])
								xx := j*int(strides[1]) - int(pads[1]) + v*int(dil[1])
								if y < 0 || y >= h || xx < 0 || xx >= wd {
									continue
								}
								sum += float64(x[((bi*c+g*cg+ci)*h+y)*wd+xx]) * float64(w[((o*cg+ci)*kh+u)*kw+v])
							}
						}
					}
					out[((bi*m+o)*oh+i)*ow+j] = float32(sum)
				}
			}
		}
	}
	return out, []int{n, m, oh, ow}
}

// bnRef is inference BatchNormalization over NCHW, written from the ONNX definition.
func bnRef(x []float32, xs []int, scale, beta, mean, vr []float32, eps float64) []float32 {
	out := make([]float32, len(x))
	per := xs[2] * xs[3]
	for i := range x {
		c := (i / per) % xs[1]
		out[i] = float32((float64(x[i])-float64(mean[c]))/math.Sqrt(float64(vr[c])+eps)*float64(scale[c]) + float64(beta[c]))
	}
	return out
}

// runConvBN evaluates a model made of Conv and BatchNormalization layers (and Relu) on
// input x with the references above, returning every tensor it computed.
func runConvBN(t *testing.T, m *model.Model, inputs map[string][]float32) map[string][]float32 {
	t.Helper()
	vals := map[string][]float32{}
	shapes := map[string][]int{}
	for k, v := range inputs {
		vals[k] = v
		shapes[k] = m.Tensor(k).Shape
	}
	get := func(name string) ([]float32, []int) {
		if v, ok := vals[name]; ok {
			return v, shapes[name]
		}
		tn := m.Tensor(name)
		if tn == nil || !tn.IsConst() {
			t.Fatalf("tensor %q has no value", name)
		}
		return f32s(tn.Data), tn.Shape
	}
	for _, l := range m.Layers {
		x, xs := get(l.Inputs[0])
		var y []float32
		ys := xs
		switch l.Type {
		case "Conv":
			w, ws := get(l.Inputs[1])
			var b []float32
			if len(l.Inputs) > 2 {
				b, _ = get(l.Inputs[2])
			}
			y, ys = convRef(x, xs, w, ws, b, &l)
		case "BatchNormalization":
			var p [4][]float32
			for k := range p {
				p[k], _ = get(l.Inputs[1+k])
			}
			y = bnRef(x, xs, p[0], p[1], p[2], p[3], float64(l.Float("epsilon", 1e-5)))
		case "Relu":
			y = make([]float32, len(x))
			for i, v := range x {
				y[i] = max(v, 0)
			}
		default:
			t.Fatalf("layer type %s", l.Type)
		}
		vals[l.Outputs[0]], shapes[l.Outputs[0]] = y, ys
	}
	return vals
}

func readNpy(t *testing.T, path string) ([]float32, []int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := npy.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var data []float32
	if err := r.Read(&data); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return data, r.Header.Descr.Shape
}

func closeTo(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	worst := 0.0
	for i := range got {
		d := math.Abs(float64(got[i]) - float64(want[i]))
		if d > tol*math.Max(1, math.Abs(float64(want[i]))) {
			t.Errorf("%s[%d] = %g, want %g", what, i, got[i], want[i])
			return
		}
		worst = math.Max(worst, d)
	}
	t.Logf("%s: largest difference %.3g", what, worst)
}

func cloneModel(m *model.Model) *model.Model {
	c := *m
	c.Tensors = nil
	for _, t := range m.Tensors {
		t.Shape = slices.Clone(t.Shape)
		if t.Data != nil {
			t.Data = slices.Clone(t.Data)
		}
		c.Tensors = append(c.Tensors, t)
	}
	c.Layers = nil
	for _, l := range m.Layers {
		l.Inputs, l.Outputs, l.Attrs = slices.Clone(l.Inputs), slices.Clone(l.Outputs), slices.Clone(l.Attrs)
		c.Layers = append(c.Layers, l)
	}
	c.Inputs, c.Outputs = slices.Clone(m.Inputs), slices.Clone(m.Outputs)
	return &c
}

// The fixture's Conv→BatchNormalization→Relu as imported and folded (internal/graph's
// FoldBatchNorm, as the engine runs it), against numpy.
func TestFoldBatchNormFixture(t *testing.T) {
	unfolded := load(t, "bn", Options{})
	x, xs := readNpy(t, filepath.Join("testdata", "expected", "bn", "x.npy"))
	if !slices.Equal(xs, []int{1, 2, 4, 4}) {
		t.Fatalf("x.npy shape %v", xs)
	}
	in := map[string][]float32{"x": x}
	want, _ := readNpy(t, filepath.Join("testdata", "expected", "bn", "y1.npy"))
	wantY2, _ := readNpy(t, filepath.Join("testdata", "expected", "bn", "y2.npy"))
	before := runConvBN(t, unfolded, in)
	closeTo(t, "unfolded y1", before["y1"], want, 1e-5)
	closeTo(t, "unfolded y2", before["y2"], wantY2, 1e-5)

	folded := cloneModel(unfolded)
	if n := graph.FoldBatchNorm(folded); n != 1 {
		t.Fatalf("folded %d, want 1", n)
	}
	if len(folded.Layers) != 3 {
		t.Fatalf("%d layers after folding, want 3", len(folded.Layers))
	}
	after := runConvBN(t, folded, in)
	closeTo(t, "folded y1", after["y1"], want, 1e-5)
	closeTo(t, "folded y2", after["y2"], wantY2, 1e-5)
	if n := graph.FoldBatchNorm(folded); n != 0 {
		t.Errorf("a second pass folded %d more", n)
	}
}
