package host

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Verdict is a layer's outcome in one word: "ok", "MISMATCH", "FINDINGS" or
// "not checked" (nothing compared its values; the sanitizer may still have run).
func (c *LayerCheck) Verdict() string {
	failedValues := false
	for _, e := range append(append(append([]OutputError(nil), c.Reference...), c.Expected...), c.Other...) {
		failedValues = failedValues || !e.OK()
	}
	switch {
	case failedValues:
		return "MISMATCH"
	case len(c.Findings) > 0:
		return "FINDINGS"
	case !c.ValuesChecked():
		return "not checked"
	}
	return "ok"
}

// details are the lines that say what was checked of the layer; other names the
// device of CheckOptions.Other.
func (c *LayerCheck) details(other string) []string {
	var out []string
	for _, e := range c.Reference {
		out = append(out, "CPU reference: "+e.describe())
	}
	for _, e := range c.Expected {
		out = append(out, "expected values: "+e.describe())
	}
	for _, e := range c.Other {
		out = append(out, "on "+other+": "+e.describe())
	}
	if other != "" && len(c.Other) == 0 {
		out = append(out, "on "+other+": not compared (that network does not keep its outputs: fused differently)")
	}
	if !c.ValuesChecked() {
		if c.Custom {
			out = append(out, "no reference: values not checked")
		} else {
			out = append(out, "not checked: "+c.NotChecked)
		}
	}
	out = append(out, c.Notes...)
	if c.Sanitized {
		switch len(c.Findings) {
		case 0:
			out = append(out, "sanitizer: no findings")
		case 1:
			out = append(out, "sanitizer: 1 finding (below)")
		default:
			out = append(out, fmt.Sprintf("sanitizer: %d findings (below)", len(c.Findings)))
		}
	} else if c.Custom {
		out = append(out, "sanitizer: not run")
		if len(c.Findings) > 0 {
			out = append(out, fmt.Sprintf("%d findings (below)", len(c.Findings)))
		}
	}
	return out
}

func (e OutputError) describe() string {
	s := fmt.Sprintf("%s max abs error %.3g, max rel error %.3g", e.Output, e.MaxAbs, e.MaxRel)
	if e.Bad > 0 {
		s += fmt.Sprintf("; %s of %s elements outside the tolerance, worst at %s", thousands(e.Bad), thousands(e.Count), coords(e.Shape, max(e.Worst, 0)))
	}
	if e.Unwritten > 0 {
		s += fmt.Sprintf("; %s elements unwritten on both devices (still the NaN fill pattern), first at %s", thousands(e.Unwritten), coords(e.Shape, e.FirstUnwritten))
	}
	return s
}

// Write prints the report as `clhost run --check` does: a verdict per layer, the
// sanitizer's findings, the whole-network comparison and a summary line.
func (r *CheckReport) Write(w io.Writer) error {
	var b strings.Builder
	if r.References {
		fmt.Fprintf(&b, "each layer (tolerance %s; CPU references run on the device's values of the layer's inputs):\n", r.Tolerance)
	} else {
		fmt.Fprintf(&b, "custom layers and expected tensors (tolerance %s; CPU references not run):\n", r.Tolerance)
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for i := range r.Layers {
		c := &r.Layers[i]
		if !r.References && !c.Custom && !c.ValuesChecked() {
			continue // nothing was asked of it
		}
		typ := c.Type
		if c.Custom {
			typ += " (custom)"
		}
		for k, d := range c.details(r.OtherDevice) {
			if k == 0 {
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", c.Verdict(), c.Layer, typ, d)
			} else {
				fmt.Fprintf(tw, "  \t\t\t%s\n", d)
			}
		}
	}
	tw.Flush()
	if f := r.Findings(); len(f) > 0 {
		b.WriteString("findings:\n")
		for _, x := range f {
			fmt.Fprintf(&b, "  %s\n", x)
		}
	}
	if r.References {
		r.writeWhole(&b)
	}
	b.WriteString(r.Summary() + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func (r *CheckReport) writeWhole(b *strings.Builder) {
	b.WriteString("graph outputs against the whole network on the CPU")
	if r.OutputTolerance != r.Tolerance {
		fmt.Fprintf(b, " (tolerance %s: every fp16 layer rounds its output to half)", r.OutputTolerance)
	}
	if len(r.FromExpected) > 0 {
		fmt.Fprintf(b, "; taking the expected values of %s", strings.Join(r.FromExpected, ", "))
	}
	if len(r.FromDevice) > 0 {
		fmt.Fprintf(b, "; taking the device's outputs of %s, which this comparison therefore does not check", strings.Join(r.FromDevice, ", "))
	}
	b.WriteString(":\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	for _, o := range r.Outputs {
		v := "ok"
		if !o.OK() {
			v = "MISMATCH"
		}
		fmt.Fprintf(tw, "  %s\t%s\n", v, o.describe())
	}
	tw.Flush()
}

// Summary is one line: which layers failed, or that every check passed and which
// layers nothing checked.
func (r *CheckReport) Summary() string {
	var failed, unchecked []string
	checked := 0
	for i := range r.Layers {
		c := &r.Layers[i]
		switch {
		case c.Failed():
			failed = append(failed, c.Layer)
		case c.ValuesChecked():
			checked++
		case r.References || c.Custom:
			unchecked = append(unchecked, c.Layer)
		}
	}
	for _, o := range r.Outputs {
		if !o.OK() {
			failed = append(failed, "graph output "+o.Output)
		}
	}
	if s, ok := r.writerSummary(failed); ok {
		return s
	}
	switch len(failed) {
	case 0:
	case 1:
		return "check FAILED: " + failed[0]
	default:
		return fmt.Sprintf("check FAILED: %s first, then %s", failed[0], strings.Join(failed[1:], ", "))
	}
	s := fmt.Sprintf("check passed: %d of %d layers' values checked", checked, len(r.Layers))
	if len(unchecked) > 0 {
		s += "; not checked: " + strings.Join(unchecked, ", ")
	}
	return s
}

// writerSummary is the summary line when the sanitizer found a custom layer writing into
// one of its inputs: that layer is the cause, named first, though its producer runs
// before it and fails first in execution order. The producer whose output it overwrote
// and every failure after the writer follow from it; failures before it that it did not
// overwrite stay on their own. failed lists the failures in execution order.
func (r *CheckReport) writerSummary(failed []string) (string, bool) {
	writer, at := "", -1
	for i := range r.Layers {
		for _, f := range r.Layers[i].Findings {
			if f.Kind == InputWritten && writer == "" {
				writer, at = r.Layers[i].Layer, i
			}
		}
	}
	if writer == "" {
		return "", false
	}
	pos := map[string]int{}
	for i := range r.Layers {
		pos[r.Layers[i].Layer] = i
	}
	var follow, own []string
	for _, name := range failed {
		i, isLayer := pos[name]
		switch {
		case name == writer:
		case !isLayer || i > at || r.Layers[i].WrittenBy == writer:
			follow = append(follow, name) // graph outputs come after every layer
		default:
			own = append(own, name)
		}
	}
	s := "check FAILED: " + writer + " writes into its input (sanitizer)"
	if len(follow) > 0 {
		s += "; " + strings.Join(follow, ", ") + " follow from it"
	}
	if len(own) > 0 {
		s += "; failing on their own: " + strings.Join(own, ", ")
	}
	return s, true
}
