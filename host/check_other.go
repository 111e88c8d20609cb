package host

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/clhost/clhost/builtin_kernels"
	"github.com/clhost/clhost/model"
)

// CheckOptions.Other: the same inputs through the network on a second device, compared
// tensor by tensor.

// runOther runs the inputs through the other network and returns a reader of its
// tensors; the other network stays locked for nothing after this.
func (n *Network) runOther(ctx context.Context, o *Network, inputs map[string]*Tensor) (*checker, error) {
	if o == n {
		return nil, errors.New("the network to compare with is the network itself")
	}
	if !o.engine.opts.KeepIntermediates && o.engine.opts.DumpTensors == "" {
		return nil, fmt.Errorf("the network on %s to compare with needs an engine opened with Options.KeepIntermediates", o.engine.device.Name)
	}
	if err := o.fillActivations(); err != nil {
		return nil, fmt.Errorf("on %s: %w", o.engine.device.Name, err)
	}
	if _, err := o.Infer(ctx, inputs); err != nil {
		return nil, fmt.Errorf("on %s: %w", o.engine.device.Name, err)
	}
	return &checker{n: o, tol: DefaultTolerance, device: map[string]*builtinkernels.HostTensor{}}, nil
}

// compareOther compares each output of layer l with the other network's value of the
// same tensor, where the other network computes it (its fusion passes may differ).
func (c *checker) compareOther(other *checker, l *model.Layer) ([]OutputError, error) {
	other.n.mu.Lock()
	defer other.n.mu.Unlock()
	var out []OutputError
	for _, name := range l.Outputs {
		if t, ok := other.n.tensors[name]; !ok || t.buf == nil {
			continue
		}
		want, err := other.read(name)
		if err != nil {
			return nil, fmt.Errorf("on %s: %w", other.n.engine.device.Name, err)
		}
		got, err := c.read(name)
		if err != nil {
			return nil, fmt.Errorf("layer %q: %w", l.Name, err)
		}
		out = append(out, compareWritten(name, got.Data, want.Data, got.Shape, c.tol))
	}
	return out, nil
}

// compareWritten is compare, except that an element holding the fill pattern on both
// devices is outside the tolerance: both networks were filled with it before the
// inference (fillActivations), so it says no kernel wrote that element, where compare
// would let NaN match NaN.
func compareWritten(name string, got, want []float32, shape []int, tol Tolerance) OutputError {
	e := compare(name, got, want, shape, tol)
	if len(got) != len(want) {
		return e
	}
	for i := range got {
		if !unwritten(got[i]) || !unwritten(want[i]) {
			continue
		}
		if e.Unwritten == 0 {
			e.FirstUnwritten = i
		}
		e.Unwritten++
	}
	if e.Unwritten > 0 {
		e.Bad += e.Unwritten
		e.MaxAbs, e.MaxRel, e.Worst = math.Inf(1), math.Inf(1), e.FirstUnwritten
	}
	return e
}
