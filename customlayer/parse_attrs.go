package customlayer

import (
	"strconv"
	"strings"

	"github.com/beevik/etree"
)

// Checks shared by every element's parser: known, required and repeated attributes,
// index values, identifiers, and child-element counts.

// attrs collects the attributes of e, reporting unknown and repeated ones.
func (p *parser) attrs(e *etree.Element, layer, elem string, known ...string) map[string]string {
	m := make(map[string]string, len(e.Attr))
	for _, a := range e.Attr {
		if a.Space == "xmlns" || (a.Space == "" && a.Key == "xmlns") {
			continue
		}
		key := a.FullKey()
		ok := false
		for _, k := range known {
			if a.Space == "" && a.Key == k {
				ok = true
				break
			}
		}
		if !ok {
			p.errorf(p.line(e), layer, elem, "unknown attribute %q (allowed: %s)", key, strings.Join(known, ", "))
			continue
		}
		if _, dup := m[key]; dup {
			p.errorf(p.line(e), layer, elem, "attribute %q given twice", key)
			continue
		}
		m[key] = a.Value
	}
	return m
}

// required returns attribute key, reporting it if missing or blank.
func (p *parser) required(e *etree.Element, m map[string]string, layer, elem, key string) (string, bool) {
	v, ok := m[key]
	if !ok {
		p.errorf(p.line(e), layer, elem, "missing attribute %q", key)
		return "", false
	}
	if strings.TrimSpace(v) == "" {
		p.errorf(p.line(e), layer, elem, "attribute %q is empty", key)
		return "", false
	}
	return v, true
}

// index parses an arg-index or port-index: a non-negative decimal integer.
func (p *parser) index(e *etree.Element, m map[string]string, layer, elem, key string) (int, bool) {
	v, ok := p.required(e, m, layer, elem, key)
	if !ok {
		return 0, false
	}
	s := strings.TrimSpace(v)
	n, err := strconv.Atoi(s)
	switch {
	case err != nil && isDigits(strings.TrimPrefix(s, "+")):
		p.errorf(p.line(e), layer, elem, "%s %q is too large", key, v)
	case err != nil:
		p.errorf(p.line(e), layer, elem, "%s %q is not an integer", key, v)
	case n < 0:
		p.errorf(p.line(e), layer, elem, "%s %d is negative", key, n)
	case n > 1<<20:
		p.errorf(p.line(e), layer, elem, "%s %d is too large", key, n)
	default:
		return n, true
	}
	return 0, false
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isIdent reports whether s is a C identifier.
func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

func hasLineBreak(s string) bool { return strings.ContainsAny(s, "\r\n") }

func (p *parser) exactlyOne(parent *etree.Element, found []*etree.Element, layer, tag string) {
	switch len(found) {
	case 0:
		p.errorf(p.line(parent), layer, "", "missing <%s> element", tag)
	case 1:
	default:
		p.errorf(p.line(found[1]), layer, tag, "given %d times (exactly once)", len(found))
	}
}

func (p *parser) noChildren(e *etree.Element, layer, elem string) {
	for _, c := range e.ChildElements() {
		p.errorf(p.line(c), layer, elem, "unexpected element <%s> (%s has none)", c.FullTag(), e.Tag)
	}
}
