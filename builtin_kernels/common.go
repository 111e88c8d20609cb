package builtinkernels

import (
	"embed"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/clhost/clhost/cl"
	"github.com/clhost/clhost/internal/opspec"
)

//go:embed *.cl
var kernelFS embed.FS

// kernelSource returns an embedded .cl file. The files are part of the binary, so a
// missing one is a build mistake that the registry test catches; it still comes back as
// an error rather than a panic.
func kernelSource(name string) (string, error) {
	b, err := kernelFS.ReadFile(name)
	if err != nil {
		return "", fmt.Errorf("builtin kernel source %s: %w", name, err)
	}
	src := string(b)
	if strings.Contains(src, storageInclude) {
		// The storage macros live in one file; drivers compile a program from its text
		// alone, so the include is expanded here (storage.cl guards against a second
		// copy where programs are joined).
		macros, err := kernelFS.ReadFile("storage.cl")
		if err != nil {
			return "", fmt.Errorf("builtin kernel source storage.cl: %w", err)
		}
		src = strings.Replace(src, storageInclude, string(macros), 1)
	}
	return src, nil
}

// storageInclude is the line of a kernel source that takes storage.cl's macros.
const storageInclude = "#include \"storage.cl\"\n"

// ShapeInferrer is implemented by ops that can compute their output shapes from their
// input shapes and attributes alone; every built-in op does, except Reshape without a
// "shape" attribute (its target shape is a constant input the graph resolves).
type ShapeInferrer interface {
	OutputShapes(p Params, in [][]int) ([][]int, error)
}

// DeviceInfoOf gathers what plans look at from a device.
func DeviceInfoOf(d *cl.Device) DeviceInfo {
	return DeviceInfo{
		IsGPU:            d.IsGPU(),
		ComputeUnits:     d.ComputeUnits,
		MaxWorkGroupSize: d.MaxWorkGroupSize,
		LocalMemBytes:    d.LocalMemBytes,
		FloatVectorWidth: d.FloatVectorWidth,
		Prefetch:         !d.IsGPU() && d.Platform != nil && strings.Contains(d.Platform.Name, "Portable Computing Language"),
		MMA:              mmaCapable(d),
	}
}

// maxElements bounds tensors to what the kernels' int indexing can address.
const maxElements = math.MaxInt32

func paramsOr(p Params) Params {
	if p == nil {
		return Attrs{}
	}
	return p
}

func numel(s []int) int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

func sameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func cloneShape(s []int) []int { return append([]int(nil), s...) }

// checkShape refuses dimensions the kernels cannot index: zero or negative sizes, and
// tensors past the int range used inside the kernels.
func checkShape(typ, what string, s []int) error {
	n := 1
	for _, d := range s {
		if d <= 0 {
			return fmt.Errorf("%s: %s has shape %v: every dimension must be at least 1", typ, what, s)
		}
		if n > maxElements/d {
			return fmt.Errorf("%s: %s has shape %v: more than %d elements", typ, what, s, maxElements)
		}
		n *= d
	}
	return nil
}

// checkCounts checks the number of inputs and outputs and every shape in them.
func checkCounts(typ string, in, out [][]int, minIn, maxIn, nOut int) error {
	if len(in) < minIn || len(in) > maxIn {
		if minIn == maxIn {
			return fmt.Errorf("%s: %d inputs, want %d", typ, len(in), minIn)
		}
		return fmt.Errorf("%s: %d inputs, want %d to %d", typ, len(in), minIn, maxIn)
	}
	if out != nil && len(out) != nOut {
		return fmt.Errorf("%s: %d outputs, want %d", typ, len(out), nOut)
	}
	for i, s := range in {
		if err := checkShape(typ, fmt.Sprintf("input %d", i), s); err != nil {
			return err
		}
	}
	for i, s := range out {
		if err := checkShape(typ, fmt.Sprintf("output %d", i), s); err != nil {
			return err
		}
	}
	return nil
}

// checkOut compares the output shapes the caller gives with the ones the op infers, so
// a graph with a wrong shape fails at planning rather than writing past a buffer.
func checkOut(typ string, got, want [][]int) error {
	if len(got) != len(want) {
		return fmt.Errorf("%s: %d outputs, want %d", typ, len(got), len(want))
	}
	for i := range want {
		if !sameShape(got[i], want[i]) {
			return fmt.Errorf("%s: output %d has shape %v, but the inputs and attributes give %v", typ, i, got[i], want[i])
		}
	}
	return nil
}

// checkTensors checks that host tensors hold as many values as their shapes say, so a
// Reference never indexes past a slice.
func checkTensors(typ string, in []*HostTensor) ([][]int, error) {
	shapes := make([][]int, len(in))
	for i, t := range in {
		if t == nil {
			return nil, fmt.Errorf("%s: input %d is nil", typ, i)
		}
		if err := checkShape(typ, fmt.Sprintf("input %d", i), t.Shape); err != nil {
			return nil, err
		}
		if len(t.Data) != numel(t.Shape) {
			return nil, fmt.Errorf("%s: input %d has %d values for shape %v (want %d)", typ, i, len(t.Data), t.Shape, numel(t.Shape))
		}
		shapes[i] = t.Shape
	}
	return shapes, nil
}

// normAxis maps a possibly negative axis into [0, rank).
func normAxis(typ, name string, axis int64, rank int) (int, error) {
	a := axis
	if a < 0 {
		a += int64(rank)
	}
	if a < 0 || a >= int64(rank) {
		return 0, fmt.Errorf("%s: %s %d is out of range for rank %d", typ, name, axis, rank)
	}
	return int(a), nil
}

// defines writes #define lines; ops bake shapes into the program text this way, so the
// compiler sees constants and identical shapes give identical text (one cached program).
type defines struct{ b strings.Builder }

func (d *defines) int(name string, v int) {
	d.b.WriteString("#define ")
	d.b.WriteString(name)
	d.b.WriteByte(' ')
	d.b.WriteString(strconv.Itoa(v))
	d.b.WriteByte('\n')
}

func (d *defines) bool(name string, v bool) {
	if v {
		d.int(name, 1)
	} else {
		d.int(name, 0)
	}
}

// program prefixes the embedded file with the defines.
func (d *defines) program(file string) (string, error) {
	body, err := kernelSource(file)
	if err != nil {
		return "", err
	}
	return d.b.String() + body, nil
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func nextPow2(v int) int {
	p := 1
	for p < v {
		p <<= 1
	}
	return p
}

// launchSize picks a work-group shape for a global size and rounds the global size up to
// a multiple of it; every kernel checks its ids against the real extent, so the padding
// items do nothing. Without device facts it leaves the choice to the driver.
func launchSize(global []int, dev DeviceInfo) ([]int, []int) {
	g := cloneShape(global)
	if dev.MaxWorkGroupSize <= 0 {
		return g, nil
	}
	// 64 work-items fill a GPU warp/wavefront pair and give PoCL's CPU driver a loop long
	// enough to vectorise, while leaving many groups to spread over compute units.
	budget := 64
	if dev.MaxWorkGroupSize < budget {
		budget = dev.MaxWorkGroupSize
	}
	l := make([]int, len(g))
	for i := range g {
		li := nextPow2(g[i])
		if li > budget {
			li = budget
		}
		if li < 1 {
			li = 1
		}
		l[i] = li
		budget /= li
		if budget < 1 {
			budget = 1
		}
		g[i] = ceilDiv(g[i], li) * li
	}
	return g, l
}

// contiguousStrides returns C-order strides of a shape.
func contiguousStrides(s []int) []int {
	st := make([]int, len(s))
	acc := 1
	for i := len(s) - 1; i >= 0; i-- {
		st[i] = acc
		acc *= s[i]
	}
	return st
}

// broadcastShapes is opspec.Broadcast, its error naming the layer type typ.
func broadcastShapes(typ string, a, b []int) ([]int, error) {
	s, err := opspec.Broadcast(a, b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", typ, err)
	}
	return s, nil
}

// broadcastStrides gives the strides with which a tensor of shape s is read when
// broadcast to shape out: C-order strides, 0 along broadcast dimensions and for the
// missing leading ones.
func broadcastStrides(s, out []int) []int {
	st := make([]int, len(out))
	cs := contiguousStrides(s)
	off := len(out) - len(s)
	for i := range out {
		j := i - off
		if j < 0 || s[j] == 1 {
			continue
		}
		st[i] = cs[j]
	}
	return st
}

// coalesce merges neighbouring dimensions that every operand walks contiguously, and
// drops size-1 dimensions, so broadcast index arithmetic runs over as few dimensions as
// possible (per-channel [N,C,H,W] + [1,C,1,1] becomes [N,C,H·W]).
func coalesce(dims []int, strides ...[]int) ([]int, [][]int) {
	var d []int
	s := make([][]int, len(strides))
	for i, n := range dims {
		if n == 1 {
			continue
		}
		if k := len(d) - 1; k >= 0 {
			merge := true
			for j := range strides {
				if s[j][k] != strides[j][i]*n {
					merge = false
					break
				}
			}
			if merge {
				d[k] *= n
				for j := range strides {
					s[j][k] = strides[j][i]
				}
				continue
			}
		}
		d = append(d, n)
		for j := range strides {
			s[j] = append(s[j], strides[j][i])
		}
	}
	return d, s
}

// referenceShapes is the common start of a CPU reference: the inputs are well formed,
// and the output shapes the caller asks for are the ones the op infers. It returns the
// input shapes and the inferred output shapes.
func referenceShapes(typ string, op ShapeInferrer, p Params, in []*HostTensor, out [][]int) ([][]int, [][]int, error) {
	shapes, err := checkTensors(typ, in)
	if err != nil {
		return nil, nil, err
	}
	want, err := op.OutputShapes(p, shapes)
	if err != nil {
		return nil, nil, err
	}
	if err := checkOut(typ, out, want); err != nil {
		return nil, nil, err
	}
	return shapes, want, nil
}
