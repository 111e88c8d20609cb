package conformance

import (
	"fmt"
	"strings"
	"testing"
)

// TestCountBlocked checks that a float test refused for another of its op
// types counts as blocked, not as a failure, under the op types it does not name, and
// that Under names the op types under 95 % by the rest.
func TestCountBlocked(t *testing.T) {
	results := []Result{
		{Test: "range_expanded", Verdict: Refused, Float: true, Ops: []string{"Ceil", "Loop"},
			Message: `model.onnx: node 8 (Loop): attribute "body": type GRAPH cannot be a clhost layer attribute`},
		{Test: "ceil", Verdict: Pass, Float: true, Ops: []string{"Ceil"}},
		{Test: "split", Verdict: Pass, Float: true, Ops: []string{"Split"}},
		{Test: "split_zero", Verdict: Refused, Float: true, Ops: []string{"Split"},
			Message: `layer "Split_0" (Split): output 0 has shape [0]`},
		{Test: "castlike", Verdict: Refused, Float: true, Ops: []string{"CastLike"},
			Message: `no implementation for layer type "CastLike" (layer "CastLike_0")`},
	}
	for _, c := range []struct{ r, want string }{{results[0].Message, "Loop"}, {results[3].Message, "Split"}, {results[4].Message, "CastLike"}} {
		if got := RefusingOp(Result{Verdict: Refused, Message: c.r}); got != c.want {
			t.Errorf("RefusingOp(%q) = %q, want %q", c.r, got, c.want)
		}
	}
	tally := Count(results)
	byOp := map[string]Counts{}
	for _, c := range tally.Ops {
		byOp[c.Op] = c.Counts
	}
	if got, want := byOp["Ceil"], (Counts{Tests: 2, Pass: 1, Refused: 1, FloatTests: 2, FloatPass: 1, FloatBlocked: 1}); got != want {
		t.Errorf("Ceil: %+v, want %+v", got, want)
	}
	if got, want := byOp["Loop"], (Counts{Tests: 1, Refused: 1, FloatTests: 1}); got != want {
		t.Errorf("Loop: %+v, want %+v", got, want)
	}
	var under []string
	for _, c := range tally.Under {
		under = append(under, fmt.Sprintf("%s %d/%d", c.Op, c.FloatPass, c.FloatJudged()))
	}
	if got := strings.Join(under, ", "); got != "Split 1/2" {
		t.Errorf("under 95 %%: %q, want Split 1/2 alone (Ceil's failure is Loop's, CastLike passes nothing)", got)
	}
}
