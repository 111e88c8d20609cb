package customlayer

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/beevik/etree"

	"github.com/clhost/clhost/customlayer/formula"
)

// The <WorkSizes> element: global and local size formulas and the dim they read.

func (p *parser) workSizes(e *etree.Element, l *Layer, label string) {
	const elem = "WorkSizes"
	m := p.attrs(e, label, elem, "global", "local", "dim")
	p.noChildren(e, label, elem)
	ws := &l.WorkSizes
	ws.Line = p.line(e)
	g, hasG := m["global"]
	if !hasG || strings.TrimSpace(g) == "" {
		g = DefaultGlobal
	}
	var err error
	ws.Global, err = formula.ParseList(g)
	if err != nil {
		p.errorf(ws.Line, label, elem, "global: %v", err)
	}
	if lo, ok := m["local"]; ok && strings.TrimSpace(lo) != "" {
		ws.Local, err = formula.ParseList(lo)
		if err != nil {
			p.errorf(ws.Line, label, elem, "local: %v", err)
		} else if ws.Global != nil && len(ws.Local) != len(ws.Global) {
			p.errorf(ws.Line, label, elem, "local has %d entries (%q) but global has %d (%q): the counts must match", len(ws.Local), lo, len(ws.Global), g)
		}
	}
	if d, ok := m["dim"]; ok {
		dim, derr := ParseDim(d)
		if derr != nil {
			p.errorf(ws.Line, label, elem, "%v", derr)
		}
		ws.Dim = dim
	}
}

// ParseDim parses a dim attribute: "output", "input" (input 0), "input N" or "input,N".
func ParseDim(s string) (Dim, error) {
	t := strings.TrimSpace(s)
	bad := fmt.Errorf("dim %q is not output, input, \"input N\" or \"input,N\"", s)
	if strings.EqualFold(t, "output") {
		return Dim{}, nil
	}
	if len(t) < 5 || !strings.EqualFold(t[:5], "input") {
		return Dim{}, bad
	}
	rest := t[5:]
	if rest == "" {
		return Dim{Input: true}, nil
	}
	if rest[0] != ' ' && rest[0] != ',' && rest[0] != '\t' {
		return Dim{}, bad
	}
	rest = strings.TrimSpace(rest)
	rest = strings.TrimSpace(strings.TrimPrefix(rest, ","))
	if !isDigits(rest) {
		return Dim{}, bad
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n > 1<<20 {
		return Dim{}, fmt.Errorf("dim %q: input index is too large", s)
	}
	return Dim{Input: true, Index: n}, nil
}
