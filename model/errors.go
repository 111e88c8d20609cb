package model

import (
	"fmt"
	"strings"
)

// maxProblems caps how many problems one Error lists: a badly broken file would otherwise
// produce a message longer than anyone reads.
const maxProblems = 20

// Error reports everything found wrong with a model at once, and where the model came from.
type Error struct {
	// Source is the file name, or `model "name"` for a model built in memory.
	Source string
	// Problems each name the tensor, layer or byte offset concerned.
	Problems []string
	// More counts problems found beyond those listed.
	More int
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Source)
	b.WriteString(": ")
	if len(e.Problems)+e.More > 1 {
		fmt.Fprintf(&b, "%d problems: ", len(e.Problems)+e.More)
	}
	b.WriteString(strings.Join(e.Problems, "; "))
	if e.More > 0 {
		fmt.Fprintf(&b, "; and %d more", e.More)
	}
	return b.String()
}

// problems collects the findings of a check, up to maxProblems.
type problems struct {
	list []string
	more int
}

func (p *problems) add(format string, args ...any) {
	if len(p.list) >= maxProblems {
		p.more++
		return
	}
	p.list = append(p.list, fmt.Sprintf(format, args...))
}

func (p *problems) empty() bool { return len(p.list) == 0 && p.more == 0 }

// err returns nil when nothing was found.
func (p *problems) err(source string) error {
	if p.empty() {
		return nil
	}
	return &Error{Source: source, Problems: p.list, More: p.more}
}

// memorySource names a model that has no file.
func memorySource(m *Model) string {
	if m == nil {
		return "model"
	}
	return fmt.Sprintf("model %q", m.Name)
}

// CycleError reports layers that depend on each other's outputs in a loop, so no order
// can run them.
type CycleError struct {
	// Layers are the layer names around the loop in data-flow order; each reads an output
	// of the one before it, and the first reads an output of the last.
	Layers []string
}

func (e *CycleError) Error() string {
	q := make([]string, 0, len(e.Layers)+1)
	for _, n := range e.Layers {
		q = append(q, fmt.Sprintf("%q", n))
	}
	if len(e.Layers) > 0 {
		q = append(q, fmt.Sprintf("%q", e.Layers[0]))
	}
	return "layers form a cycle: " + strings.Join(q, " -> ")
}
