package conformance

import (
	"regexp"
	"sort"
)

// Counts are the verdicts of a set of tests.
type Counts struct {
	Tests, Pass, Wrong, Refused, Crash int
	// FloatTests are the tests whose every input and output is a floating-point tensor,
	// FloatPass those of them that pass, FloatBlocked those refused because of another
	// op type than the one counted.
	FloatTests, FloatPass, FloatBlocked int
}

// OpCounts are the verdicts of the tests whose graph holds one op type.
type OpCounts struct {
	Op string
	Counts
}

// Tally is a run's verdicts per op type and in total.
type Tally struct {
	Ops   []OpCounts // sorted by op type
	Total Counts
	// Under are the op types whose float tests, blocked ones aside, pass less than 95 %
	// of the time, of those that pass any test at all, in the order of Ops.
	Under []OpCounts
}

// FloatJudged is the number of float tests that say something about the op type: those
// not blocked by another.
func (c Counts) FloatJudged() int { return c.FloatTests - c.FloatBlocked }

func (c *Counts) add(r Result, blocked bool) {
	c.Tests++
	switch r.Verdict {
	case Pass:
		c.Pass++
	case Wrong:
		c.Wrong++
	case Refused:
		c.Refused++
	default:
		c.Crash++
	}
	if r.Float {
		c.FloatTests++
		switch {
		case r.Verdict == Pass:
			c.FloatPass++
		case blocked:
			c.FloatBlocked++
		}
	}
}

// Count tallies results per op type (a test counts once under each op type its graph
// holds; one whose model could not be read under "(unreadable)") and in total. A float
// test refused because of another of its op types (Loop in an expanded Range,
// RandomUniformLike in an expanded Bernoulli) counts as blocked under the others: it says
// nothing about them.
func Count(results []Result) Tally {
	perOp := map[string]*Counts{}
	var t Tally
	for _, r := range results {
		t.Total.add(r, false)
		ops := r.Ops
		if len(ops) == 0 {
			ops = []string{"(unreadable)"}
		}
		by := RefusingOp(r)
		for _, op := range ops {
			if perOp[op] == nil {
				perOp[op] = &Counts{}
			}
			perOp[op].add(r, by != "" && by != op)
		}
	}
	for op, c := range perOp {
		t.Ops = append(t.Ops, OpCounts{Op: op, Counts: *c})
	}
	sort.Slice(t.Ops, func(i, j int) bool { return t.Ops[i].Op < t.Ops[j].Op })
	for _, c := range t.Ops {
		if c.Pass > 0 && 100*c.FloatPass < 95*c.FloatJudged() {
			t.Under = append(t.Under, c)
		}
	}
	return t
}

// RefusingOp is the op type a refused test's message names as the one refused, or "".
func RefusingOp(r Result) string {
	if r.Verdict != Refused {
		return ""
	}
	if m := refusingOpRE.FindStringSubmatch(r.Message); m != nil {
		return m[1]
	}
	return ""
}

// refusingOpRE matches how the importer and the compiler name a refused node: `node "n"
// (Op):`, `node 8 (Op):`, `layer "n" (Op)` and `layer type "Op"`.
var refusingOpRE = regexp.MustCompile(`(?:node (?:"[^"]*"|\d+) \(|layer "[^"]*" \(|layer type ")([A-Za-z][\w.:]*)`)
