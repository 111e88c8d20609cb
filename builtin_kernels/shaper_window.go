package builtinkernels

import (
	"fmt"
	"slices"
	"strings"

	"github.com/clhost/clhost/internal/opspec"
	"github.com/clhost/clhost/model"
)

// ConvGeometry checks a Conv layer's input (N, C, spatial…) and weight (M, C/group,
// kernel…) shapes against its attributes (kernel_shape, strides, dilations, pads, group,
// auto_pad) and resolves its window.
func ConvGeometry(l *model.Layer, x, w []int) (opspec.Window, error) {
	if len(x) < 3 {
		return opspec.Window{}, fmt.Errorf("input has shape %v; Conv needs N, C and at least one spatial axis", x)
	}
	if len(w) != len(x) {
		return opspec.Window{}, fmt.Errorf("weight shape %v has rank %d, input %v rank %d; they must match", w, len(w), x, len(x))
	}
	group, err := intAttr(l, "group", 1)
	if err != nil {
		return opspec.Window{}, err
	}
	switch {
	case group < 1:
		return opspec.Window{}, fmt.Errorf("group is %d; it must be at least 1", group)
	case x[1] != w[1]*int(group):
		return opspec.Window{}, fmt.Errorf("input has %d channels, but weight %v with group %d takes %d", x[1], w, group, w[1]*int(group))
	case w[0]%int(group) != 0:
		return opspec.Window{}, fmt.Errorf("%d output channels (weight %v) do not divide into %d groups", w[0], w, group)
	}
	kernel := w[2:]
	if l.Has("kernel_shape") {
		ks, err := IntsAttr(l, "kernel_shape", len(kernel), 1, 1)
		if err != nil {
			return opspec.Window{}, err
		}
		if !slices.Equal(ks, kernel) {
			return opspec.Window{}, fmt.Errorf("kernel_shape %v does not match weight %v", ks, w)
		}
	}
	return layerWindow(l, x[2:], kernel, false)
}

// PoolGeometry checks a MaxPool or AveragePool layer's input (N, C, spatial…) against its
// attributes (kernel_shape, strides, dilations, pads, ceil_mode, auto_pad) and resolves its
// window.
func PoolGeometry(l *model.Layer, x []int) (opspec.Window, error) {
	if len(x) < 3 {
		return opspec.Window{}, fmt.Errorf("input has shape %v; pooling needs N, C and at least one spatial axis", x)
	}
	if !l.Has("kernel_shape") {
		return opspec.Window{}, fmt.Errorf("attribute kernel_shape is required")
	}
	kernel, err := IntsAttr(l, "kernel_shape", len(x)-2, 1, 1)
	if err != nil {
		return opspec.Window{}, err
	}
	ceil, err := intAttr(l, "ceil_mode", 0)
	if err != nil {
		return opspec.Window{}, err
	}
	if ceil != 0 && ceil != 1 {
		return opspec.Window{}, fmt.Errorf("ceil_mode is %d; it must be 0 or 1", ceil)
	}
	return layerWindow(l, x[2:], kernel, ceil == 1)
}

// resolveWindow reads a window's strides, dilations, pads and auto_pad and resolves it
// by opspec.ResolveWindow, the rule the kernels follow too.
func layerWindow(l *model.Layer, in, kernel []int, ceil bool) (opspec.Window, error) {
	n := len(in)
	strides, err := IntsAttr(l, "strides", n, 1, 1)
	if err != nil {
		return opspec.Window{}, err
	}
	dilations, err := IntsAttr(l, "dilations", n, 1, 1)
	if err != nil {
		return opspec.Window{}, err
	}
	pads, err := IntsAttr(l, "pads", 2*n, 0, 0)
	if err != nil {
		return opspec.Window{}, err
	}
	autoPad, err := stringAttr(l, "auto_pad", "NOTSET")
	if err != nil {
		return opspec.Window{}, err
	}
	return opspec.ResolveWindow(in, kernel, strides, dilations, pads, autoPad, ceil)
}

// intAttr reads an integer attribute, refusing one of another kind rather than silently
// using the default.
func intAttr(l *model.Layer, name string, def int64) (int64, error) {
	a := l.Attr(name)
	if a == nil {
		return def, nil
	}
	if a.Kind != model.AttrInt {
		return 0, fmt.Errorf("attribute %s must be an int", name)
	}
	return a.Int, nil
}

// IntsAttr reads an integer-list attribute of n values, each at least min; when absent,
// every value is def.
func IntsAttr(l *model.Layer, name string, n int, def, min int) ([]int, error) {
	out := make([]int, n)
	a := l.Attr(name)
	if a == nil {
		for i := range out {
			out[i] = def
		}
		return out, nil
	}
	if a.Kind != model.AttrInts {
		return nil, fmt.Errorf("attribute %s must be a list of ints", name)
	}
	if len(a.Ints) != n {
		return nil, fmt.Errorf("attribute %s has %d values %v, want %d", name, len(a.Ints), a.Ints, n)
	}
	for i, v := range a.Ints {
		if v < int64(min) || v > 1<<31 {
			return nil, fmt.Errorf("attribute %s %v: value %d is out of range", name, a.Ints, v)
		}
		out[i] = int(v)
	}
	return out, nil
}

func stringAttr(l *model.Layer, name, def string) (string, error) {
	a := l.Attr(name)
	if a == nil {
		return def, nil
	}
	if a.Kind != model.AttrString {
		return "", fmt.Errorf("attribute %s must be a string", name)
	}
	return a.Str, nil
}

// MaxPoolOf is the MaxPool a Conv carries under FusedMaxPoolPrefix, as a layer of its
// own with the attributes' plain names, and whether it carries one.
func MaxPoolOf(l *model.Layer) (*model.Layer, bool) {
	if l.Type != "Conv" || !l.Has(opspec.FusedMaxPoolPrefix+"kernel_shape") {
		return nil, false
	}
	pool := &model.Layer{Name: l.Name, Type: "MaxPool"}
	for _, a := range l.Attrs {
		if name, ok := strings.CutPrefix(a.Name, opspec.FusedMaxPoolPrefix); ok {
			a.Name = name
			pool.Attrs = append(pool.Attrs, a)
		}
	}
	return pool, true
}
