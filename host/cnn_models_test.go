package host

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/clhost/clhost/model"
)

// cnnNet builds the layer shapes of bench/models/make_models.py in Go (seeded random
// weights, BatchNormalization already folded), so the tests need no ONNX tooling.
type cnnNet struct {
	b   *model.Builder
	rng *rand.Rand
	n   int
}

func newCNN(name string, batch, size int) (*cnnNet, string) {
	c := &cnnNet{b: model.NewBuilder(name), rng: rand.New(rand.NewSource(1))}
	return c, c.b.Input("input", model.Float32, batch, 3, size, size)
}

func (c *cnnNet) name(p string) string {
	c.n++
	return fmt.Sprintf("%s%d", p, c.n)
}

func (c *cnnNet) normal(scale float64, shape ...int) string {
	v := make([]float32, elements(shape))
	for i := range v {
		v[i] = float32(c.rng.NormFloat64() * scale)
	}
	return c.b.ConstFloat32(c.name("w"), shape, v)
}

// conv is a k×k convolution with bias (padding k/2 unless pad ≥ 0) and an optional
// "relu" or "relu6" after it.
func (c *cnnNet) conv(x string, cin, cout, k, s, group int, act string, pad int) string {
	if pad < 0 {
		pad = k / 2
	}
	w := c.normal(math.Sqrt(2/float64(cin/group*k*k)), cout, cin/group, k, k)
	bias := c.normal(0.1, cout)
	y := c.b.Layer("Conv", c.name("conv"), []string{x, w, bias}, model.IntsAttr("strides", int64(s), int64(s)),
		model.IntsAttr("pads", int64(pad), int64(pad), int64(pad), int64(pad)), model.IntAttr("group", int64(group)),
		model.IntsAttr("kernel_shape", int64(k), int64(k)))
	switch act {
	case "relu":
		return c.b.Layer("Relu", c.name("relu"), []string{y})
	case "relu6":
		return c.b.Layer("Clip", c.name("clip"), []string{y}, model.FloatAttr("min", 0), model.FloatAttr("max", 6))
	}
	return y
}

func (c *cnnNet) head(x string, cin int) string {
	g := c.b.Layer("GlobalAveragePool", c.name("gap"), []string{x})
	f := c.b.Layer("Flatten", c.name("flatten"), []string{g}, model.IntAttr("axis", 1))
	w := c.normal(math.Sqrt(1/float64(cin)), 1000, cin)
	return c.b.Layer("Gemm", c.name("gemm"), []string{f, w, c.b.ConstFloat32(c.name("b"), []int{1000}, make([]float32, 1000))}, model.IntAttr("transB", 1))
}

func (c *cnnNet) build(t testing.TB, out string) *model.Model {
	t.Helper()
	c.b.Output(out)
	m, err := c.b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// resnet18Model is ResNet-18's layers on a batch × 3 × size × size input.
func resnet18Model(t testing.TB, batch, size int) *model.Model {
	c, x := newCNN("resnet18", batch, size)
	x = c.conv(x, 3, 64, 7, 2, 1, "relu", -1)
	x = c.b.Layer("MaxPool", c.name("pool"), []string{x}, model.IntsAttr("kernel_shape", 3, 3), model.IntsAttr("strides", 2, 2), model.IntsAttr("pads", 1, 1, 1, 1))
	cin := 64
	for _, st := range [][2]int{{64, 1}, {128, 2}, {256, 2}, {512, 2}} {
		cout := st[0]
		for blk := 0; blk < 2; blk++ {
			s := st[1]
			if blk > 0 {
				s = 1
			}
			y := c.conv(x, cin, cout, 3, s, 1, "relu", -1)
			y = c.conv(y, cout, cout, 3, 1, 1, "", -1)
			sc := x
			if s != 1 || cin != cout {
				sc = c.conv(x, cin, cout, 1, s, 1, "", -1)
			}
			x = c.b.Layer("Relu", c.name("relu"), []string{c.b.Layer("Add", c.name("add"), []string{y, sc})})
			cin = cout
		}
	}
	return c.build(t, c.head(x, 512))
}

// mobilenetV2Model is MobileNetV2's layers.
func mobilenetV2Model(t testing.TB, batch, size int) *model.Model {
	c, x := newCNN("mobilenet_v2", batch, size)
	x = c.conv(x, 3, 32, 3, 2, 1, "relu6", -1)
	cin := 32
	for _, r := range [][4]int{{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2}, {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}} {
		t6, cout, reps, s := r[0], r[1], r[2], r[3]
		for i := 0; i < reps; i++ {
			st := s
			if i > 0 {
				st = 1
			}
			hid := cin * t6
			y := x
			if t6 != 1 {
				y = c.conv(x, cin, hid, 1, 1, 1, "relu6", -1)
			}
			y = c.conv(y, hid, hid, 3, st, hid, "relu6", -1)
			y = c.conv(y, hid, cout, 1, 1, 1, "", -1)
			if st == 1 && cin == cout {
				y = c.b.Layer("Add", c.name("add"), []string{x, y})
			}
			x, cin = y, cout
		}
	}
	x = c.conv(x, cin, 1280, 1, 1, 1, "relu6", -1)
	return c.build(t, c.head(x, 1280))
}

// squeezenetModel is SqueezeNet 1.1's layers: fire modules, ceil-mode pools, a 1×1
// classifier conv averaged over the plane.
func squeezenetModel(t testing.TB, batch, size int) *model.Model {
	c, x := newCNN("squeezenet1_1", batch, size)
	fire := func(x string, cin, sq, e1, e3 int) string {
		s := c.conv(x, cin, sq, 1, 1, 1, "relu", -1)
		return c.b.Layer("Concat", c.name("concat"), []string{c.conv(s, sq, e1, 1, 1, 1, "relu", -1), c.conv(s, sq, e3, 3, 1, 1, "relu", -1)}, model.IntAttr("axis", 1))
	}
	pool := func(x string) string {
		return c.b.Layer("MaxPool", c.name("pool"), []string{x}, model.IntsAttr("kernel_shape", 3, 3), model.IntsAttr("strides", 2, 2), model.IntAttr("ceil_mode", 1))
	}
	x = pool(c.conv(x, 3, 64, 3, 2, 1, "relu", 0))
	x = fire(fire(x, 64, 16, 64, 64), 128, 16, 64, 64)
	x = pool(x)
	x = fire(fire(x, 128, 32, 128, 128), 256, 32, 128, 128)
	x = pool(x)
	for _, f := range [][3]int{{256, 48, 192}, {384, 48, 192}, {384, 64, 256}, {512, 64, 256}} {
		x = fire(x, f[0], f[1], f[2], f[2])
	}
	x = c.conv(x, 512, 1000, 1, 1, 1, "relu", -1)
	g := c.b.Layer("GlobalAveragePool", c.name("gap"), []string{x})
	return c.build(t, c.b.Layer("Flatten", c.name("flatten"), []string{g}, model.IntAttr("axis", 1)))
}
