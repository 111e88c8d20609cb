package graph

import (
	"math"
	"slices"

	builtinkernels "github.com/clhost/clhost/builtin_kernels"
	"github.com/clhost/clhost/internal/opspec"
	"github.com/clhost/clhost/model"
)

// The rules every device takes: an activation or a residual Add folded into the Conv or
// Gemm before it.

// residual returns the operand of an Add other than the Conv's output out, when it can
// be the Conv's residual: a float32 tensor of exactly out's shape.
func (f *fuser) residual(out string, add *model.Layer) (string, bool) {
	if len(add.Inputs) != 2 {
		return "", false
	}
	other := add.Inputs[0]
	if other == out {
		other = add.Inputs[1]
	}
	if other == out || other == "" || add.Inputs[0] != out && add.Inputs[1] != out {
		return "", false
	}
	a, b := f.tensor[out], f.tensor[other]
	if a == nil || b == nil || a.Shape == nil || a.Type != model.Float32 || b.Type != model.Float32 ||
		!slices.Equal(a.Shape, b.Shape) {
		return "", false
	}
	return other, true
}

// residualSlot is the input a layer takes a residual at: 3 for a Conv, 7 for a
// InvertedResidualType layer with its projection, 0 for others.
func residualSlot(l *model.Layer) int {
	switch l.Type {
	case "Conv":
		return 3
	case opspec.InvertedResidualType:
		if len(l.Inputs) > 5 {
			return 7
		}
	}
	return 0
}

// fused reports whether a Conv (or a InvertedResidualType block) already carries a
// residual or an activation: an Add after it can no longer move inside.
func fused(l *model.Layer) bool {
	slot := residualSlot(l)
	return len(l.Inputs) > slot && l.Inputs[slot] != "" || l.String(opspec.FusedActivationAttr, "") != ""
}

// activation returns the fused attributes that stand for an activation layer, and
// whether it is one Fuse folds.
func activation(l *model.Layer) ([]model.Attr, bool) {
	if !slices.Contains(builtinkernels.FusedActivations(), l.Type) || len(l.Inputs) != 1 {
		return nil, false
	}
	attrs := []model.Attr{model.StringAttr(opspec.FusedActivationAttr, l.Type)}
	switch l.Type {
	case "LeakyRelu":
		attrs = append(attrs, model.FloatAttr(opspec.FusedAlphaAttr, l.Float("alpha", 0.01)))
	case "Clip":
		// The bounds the Clip layer itself uses, written out so the defaults of the two
		// forms never have to agree.
		attrs = append(attrs,
			model.FloatAttr(opspec.FusedMinAttr, l.Float("min", -math.MaxFloat32)),
			model.FloatAttr(opspec.FusedMaxAttr, l.Float("max", math.MaxFloat32)))
	}
	return attrs, true
}

// setAttrs returns a copy of attrs with set added, replacing attributes of the same names
// and dropping stale fused parameters (an empty FusedActivationAttr may carry some).
func setAttrs(attrs, set []model.Attr) []model.Attr {
	out := make([]model.Attr, 0, len(attrs)+len(set))
	for _, a := range attrs {
		switch a.Name {
		case opspec.FusedActivationAttr, opspec.FusedAlphaAttr, opspec.FusedMinAttr, opspec.FusedMaxAttr:
			continue
		}
		if slices.ContainsFunc(set, func(s model.Attr) bool { return s.Name == a.Name }) {
			continue
		}
		out = append(out, a)
	}
	return append(out, set...)
}
