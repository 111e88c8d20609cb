package host

import (
	"context"
	"errors"
	"fmt"

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
		out = append(out, compare(name, got.Data, want.Data, got.Shape, c.tol))
	}
	return out, nil
}
