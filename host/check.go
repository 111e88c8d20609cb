package host

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/clhost/clhost/builtin_kernels"
	"github.com/clhost/clhost/model"
)

// Checking an inference: what a check reports, and Network.Check, which runs the
// checks; check_reference.go, check_expect.go, check_other.go and check_compare.go hold
// their parts, check_report.go the report's text.

// Tolerance is how far a device value may lie from its reference: |d - r| ≤ Abs + Rel·|r|
// for every element (numpy's allclose). NaN matches only NaN.
type Tolerance struct{ Abs, Rel float64 }

// DefaultTolerance is the tolerance CheckOptions takes when it gives none.
var DefaultTolerance = Tolerance{Abs: 1e-3, Rel: 1e-3}

// FP16OutputTolerance is the default of the graph outputs' comparison with the whole
// network on the CPU where precision fp16 stores activations as half: each layer's check holds its own rounding to
// DefaultTolerance, but a network's outputs carry every layer's rounding to half (up to
// 2^-11 of each value), which add up over its depth.
var FP16OutputTolerance = Tolerance{Abs: 1e-2, Rel: 1e-2}

func (t Tolerance) String() string {
	return fmt.Sprintf("|device - reference| ≤ %g + %g·|reference|", t.Abs, t.Rel)
}

// OutputError compares one tensor of the device with a reference.
type OutputError struct {
	Output string
	MaxAbs float64 // largest |device - reference|
	MaxRel float64 // largest |device - reference| / max(|reference|, 1e-6)
	// Worst is the flat index of the largest absolute error.
	Worst int
	// Bad counts the elements outside the tolerance; Count is the elements compared.
	Bad, Count int
	// Shape is the tensor's shape, to name Worst as coordinates.
	Shape []int
	// Unwritten counts the elements (among Bad) that no kernel wrote on either device of
	// CheckOptions.Other: both still hold the pattern they were filled with; the first is
	// at flat index FirstUnwritten.
	Unwritten, FirstUnwritten int
}

// OK says whether every element lay within the tolerance.
func (e OutputError) OK() bool { return e.Bad == 0 }

// CheckOptions say what Network.Check checks beyond each built-in layer's CPU
// reference and the whole network's.
type CheckOptions struct {
	// Sanitize runs every custom layer again alone, on copies of its inputs in guarded
	// buffers, looking for unwritten output, writes outside its buffers, results that
	// change from run to run and inputs it writes (sanitize.go).
	Sanitize bool
	// Expect holds reference values of tensors of the graph, by tensor name or by the
	// name of the layer that produces it (a layer of one output): custom-layer outputs,
	// intermediate tensors or graph outputs. Each is compared with the device's value;
	// where a custom layer's every output has one, the whole-network reference takes
	// them instead of the device's.
	Expect map[string]*Tensor
	// Tolerance of every comparison; the zero value means DefaultTolerance.
	Tolerance Tolerance
	// Other is the same model compiled on a second engine — typically another device —
	// opened with Options.KeepIntermediates: it runs the same inputs, and every tensor
	// both networks compute is compared (custom layers included), so that a kernel that
	// breaks only on one device shows where.
	Other *Network
	// NoReferences skips the CPU references (each built-in layer's and the whole
	// network's), which take long on large models: only the expectations and the
	// sanitizer check anything then.
	NoReferences bool
}

// LayerCheck is what was checked of one layer, and how it went.
type LayerCheck struct {
	Layer, Type string
	Custom      bool
	// Reference compares each output with the layer's CPU reference run on the device's
	// values of its inputs (built-in layers only: custom layers have no reference).
	Reference []OutputError
	// Expected compares outputs with CheckOptions.Expect.
	Expected []OutputError
	// Other compares outputs with CheckOptions.Other's values of the same tensors.
	Other []OutputError
	// Sanitized says the sanitizer ran the layer; Findings are what it found.
	Sanitized bool
	Findings  []Finding
	// NotChecked says why no value of the layer was compared, when none was.
	NotChecked string
	// Notes point at other layers' findings that bear on this one: a custom layer that
	// writes into this layer's output in the inference.
	Notes []string
	// WrittenBy names the custom layer that writes into this layer's output, per the
	// sanitizer: the verdict attributes this layer's mismatch to it.
	WrittenBy string
}

// Failed says whether a comparison or the sanitizer found a problem.
func (c *LayerCheck) Failed() bool {
	for _, e := range append(append(slices.Clip(c.Reference), c.Expected...), c.Other...) {
		if !e.OK() {
			return true
		}
	}
	return len(c.Findings) > 0
}

// ValuesChecked says whether some output of the layer was compared with a reference.
func (c *LayerCheck) ValuesChecked() bool { return len(c.Reference)+len(c.Expected)+len(c.Other) > 0 }

// CheckReport is the result of Network.Check: a verdict per layer in execution
// order, and the graph outputs against a CPU reference of the whole network.
type CheckReport struct {
	// Tolerance is each layer's; OutputTolerance the graph outputs' against the whole
	// network on the CPU (FP16OutputTolerance where fp16 stores activations as half,
	// unless CheckOptions gave a tolerance).
	Tolerance, OutputTolerance Tolerance
	// References says whether the CPU references ran (CheckOptions.NoReferences).
	References bool
	// OtherDevice names the device of CheckOptions.Other; "" without one.
	OtherDevice string
	Layers      []LayerCheck
	// Outputs compares each graph output with the whole network computed on the CPU.
	Outputs []OutputError
	// FromDevice lists the custom layers whose device outputs the whole-network
	// reference took as they were, having no reference of its own for them: the
	// comparison checks nothing of those layers. FromExpected lists those whose
	// expected values (CheckOptions.Expect) it took instead.
	FromDevice, FromExpected []string
}

// Failed says whether any check failed.
func (r *CheckReport) Failed() bool {
	for i := range r.Layers {
		if r.Layers[i].Failed() {
			return true
		}
	}
	for _, o := range r.Outputs {
		if !o.OK() {
			return true
		}
	}
	return false
}

// Findings returns the sanitizer's findings of every layer.
func (r *CheckReport) Findings() []Finding {
	var out []Finding
	for _, l := range r.Layers {
		out = append(out, l.Findings...)
	}
	return out
}

// Check runs one inference and checks it: every built-in layer against its CPU
// reference on the device's values of its inputs, each expected tensor against its
// value, every custom layer through the sanitizer (opts.Sanitize), and the graph outputs
// against the whole network computed on the CPU. Every layer gets a LayerCheck, also
// those nothing could check, with the reason. It returns the report and the inference's
// outputs.
//
// A custom layer has no CPU reference: the whole-network reference takes its device
// values (or opts.Expect's), so the comparison of the outputs measures the built-in
// layers around it; CheckReport.FromDevice lists those layers.
//
// Layer checks, expectations of intermediate tensors, the sanitizer and networks with
// custom layers need an engine opened with Options.KeepIntermediates, so that every
// activation is still in its buffer when the inference ends.
func (n *Network) Check(ctx context.Context, inputs map[string]*Tensor, opts CheckOptions) (*CheckReport, map[string]*Tensor, error) {
	outTol := opts.Tolerance
	if opts.Tolerance == (Tolerance{}) {
		opts.Tolerance, outTol = DefaultTolerance, DefaultTolerance
		if n.storesHalf() {
			outTol = FP16OutputTolerance
		}
	}
	kept := n.engine.opts.KeepIntermediates || n.engine.opts.DumpTensors != ""
	if !kept {
		switch {
		case len(n.CustomLayers()) > 0:
			return nil, nil, errors.New("checking a network with custom layers needs an engine opened with Options.KeepIntermediates: their outputs would be overwritten by buffer reuse")
		case opts.Sanitize:
			return nil, nil, errors.New("the sanitizer needs an engine opened with Options.KeepIntermediates")
		}
	}
	expect, err := n.resolveExpect(opts.Expect, kept)
	if err != nil {
		return nil, nil, err
	}
	var other *checker
	if opts.Other != nil {
		if other, err = n.runOther(ctx, opts.Other, inputs); err != nil {
			return nil, nil, err
		}
	}
	n.mu.Lock()
	err = n.fillActivations()
	n.mu.Unlock()
	if err != nil {
		return nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	n.mu.Lock()
	if n.released {
		n.mu.Unlock()
		return nil, nil, errors.New("network is released (its engine was closed)")
	}
	if err = n.checkInputs(inputs); err != nil {
		n.mu.Unlock()
		return nil, nil, err
	}
	outs, err := n.run(ctx, inputs)
	n.mu.Unlock()
	var guarded *GuardError
	if err != nil && !errors.As(err, &guarded) {
		return nil, nil, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	c := &checker{n: n, tol: opts.Tolerance, device: map[string]*builtinkernels.HostTensor{}}
	for name, t := range inputs {
		c.device[name] = &builtinkernels.HostTensor{Shape: t.Shape, Data: t.Data}
	}
	r := &CheckReport{Tolerance: opts.Tolerance, OutputTolerance: outTol, References: !opts.NoReferences}
	if other != nil {
		r.OtherDevice = other.n.engine.device.Name
	}
	var jobs []*refJob
	for _, s := range n.steps {
		lc := LayerCheck{Layer: s.layer, Type: s.typ, Custom: s.custom}
		l := n.layer(s.layer)
		if l == nil {
			lc.NotChecked = "not a layer of the model"
			r.Layers = append(r.Layers, lc)
			continue
		}
		for _, name := range l.Outputs {
			want, ok := expect[name]
			if !ok {
				continue
			}
			got, err := c.read(name)
			if err != nil {
				return nil, nil, fmt.Errorf("layer %q: %w", l.Name, err)
			}
			lc.Expected = append(lc.Expected, compare(name, got.Data, want.Data, got.Shape, c.tol))
		}
		if other != nil {
			if lc.Other, err = c.compareOther(other, l); err != nil {
				return nil, nil, err
			}
		}
		switch {
		case s.custom:
			if opts.Sanitize {
				f, err := n.sanitizeStep(s, c.read)
				if err != nil {
					return nil, nil, fmt.Errorf("sanitizer: %w", err)
				}
				lc.Sanitized, lc.Findings = true, f
			}
			if guarded != nil && !lc.Sanitized {
				lc.Findings = append(lc.Findings, guardFindings(guarded, s.layer)...)
			}
			if kept {
				f, err := c.nonFinite(s, l)
				if err != nil {
					return nil, nil, err
				}
				lc.Findings = append(lc.Findings, f...)
			}
			if !lc.ValuesChecked() {
				lc.NotChecked = "no reference"
			}
		case opts.NoReferences:
			if !lc.ValuesChecked() {
				lc.NotChecked = "CPU reference not run"
			}
		case !kept:
			lc.NotChecked = "intermediate tensors not kept (Options.KeepIntermediates)"
		default:
			job, err := c.referenceJob(l, len(r.Layers))
			if err != nil {
				lc.NotChecked = err.Error()
				break
			}
			jobs = append(jobs, job)
		}
		if s.custom && !opts.NoReferences {
			// The whole-network reference takes these; read now, before it runs.
			for _, name := range l.Outputs {
				if _, err := c.read(name); err != nil {
					return nil, nil, fmt.Errorf("layer %q: %w", l.Name, err)
				}
			}
		}
		r.Layers = append(r.Layers, lc)
	}
	// Every device value is read: the references run in parallel, the whole network's
	// beside the layers'.
	var wg sync.WaitGroup
	var wholeErr error
	if !opts.NoReferences {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wholeErr = c.wholeNetwork(r, inputs, outs, expect)
		}()
	}
	next := make(chan *refJob)
	for range min(runtime.GOMAXPROCS(0), max(len(jobs), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				ref, err := j.run(c.tol)
				if err != nil {
					r.Layers[j.at].NotChecked = err.Error()
					continue
				}
				r.Layers[j.at].Reference = ref
			}
		}()
	}
	for _, j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()
	if wholeErr != nil {
		return nil, nil, wholeErr
	}
	r.noteWrittenInputs(n)
	return r, outs, nil
}

// noteWrittenInputs marks the layers whose outputs a custom layer writes into: the
// inference ran that kernel on them, so their values on the device are not theirs.
func (r *CheckReport) noteWrittenInputs(n *Network) {
	for _, f := range r.Findings() {
		if f.Kind != InputWritten || f.Tensor == "" {
			continue
		}
		for i := range r.Layers {
			if l := n.layer(r.Layers[i].Layer); l != nil && slices.Contains(l.Outputs, f.Tensor) {
				r.Layers[i].WrittenBy = f.Layer
				r.Layers[i].Notes = append(r.Layers[i].Notes, fmt.Sprintf("%s writes into its output %s (sanitizer, below): the device's value is not this layer's", f.Layer, f.Tensor))
			}
		}
	}
}

func (n *Network) layer(name string) *model.Layer {
	for i := range n.Model.Layers {
		if n.Model.Layers[i].Name == name {
			return &n.Model.Layers[i]
		}
	}
	return nil
}
