package customlayer

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/beevik/etree"
)

// The <Kernel> element: the entry point, its <Source> files and its <Define>s, and the
// define values they declare.

func (p *parser) kernel(e *etree.Element, l *Layer, label string) {
	m := p.attrs(e, label, "Kernel", "entry")
	if v, ok := p.required(e, m, label, "Kernel", "entry"); ok {
		if !isIdent(strings.TrimSpace(v)) {
			p.errorf(p.line(e), label, "Kernel", "entry %q is not a valid OpenCL C function name", v)
		}
		l.Entry = strings.TrimSpace(v)
	}
	nsrc := 0
	inc := &includer{fsys: p.opt.FS, once: map[string]bool{}} // one program: #pragma once holds across its sources
	for _, c := range e.ChildElements() {
		switch {
		case isTag(c, "Source"):
			nsrc++
			p.source(c, l, label, nsrc, inc)
		case isTag(c, "Define"):
			p.define(c, l, label, len(l.Defines)+1)
		default:
			p.errorf(p.line(c), label, "Kernel", "unexpected element <%s> (expected Source or Define)", c.FullTag())
		}
	}
	if nsrc == 0 {
		p.errorf(p.line(e), label, "Kernel", "no <Source> element (at least one is required)")
	}
}

func (p *parser) source(e *etree.Element, l *Layer, label string, n int, inc *includer) {
	elem := fmt.Sprintf("Source #%d", n)
	m := p.attrs(e, label, elem, "filename")
	p.noChildren(e, label, elem)
	fn, ok := p.required(e, m, label, elem, "filename")
	if !ok {
		return
	}
	elem = fmt.Sprintf("Source %q", fn)
	src := Source{Filename: fn, Line: p.line(e)}
	var data []byte
	var err error
	if p.opt.FS == nil {
		src.Path = fn
		if !filepath.IsAbs(fn) {
			src.Path = filepath.Join(p.opt.Dir, fn)
		}
		data, err = readLimited(func() (io.ReadCloser, error) { return os.Open(src.Path) })
	} else {
		if strings.HasPrefix(fn, "/") {
			src.Path = path.Clean(strings.TrimLeft(fn, "/"))
		} else {
			src.Path = path.Join(p.opt.Dir, fn)
		}
		if !fs.ValidPath(src.Path) {
			p.errorf(src.Line, label, elem, "cannot read %s: the path leaves the file system it is read from", src.Path)
			return
		}
		data, err = readLimited(func() (io.ReadCloser, error) { return p.opt.FS.Open(src.Path) })
	}
	if err != nil {
		p.errorf(src.Line, label, elem, "cannot read %s: %s", src.Path, describeIOError(err))
		return
	}
	inc.total, inc.files = len(data), nil
	text, err := inc.expand(string(data), src.Path, 0)
	if err != nil {
		p.errorf(src.Line, label, elem, "%v", err)
		return
	}
	src.Text, src.Includes = text, inc.files
	l.Sources = append(l.Sources, src)
}

func (p *parser) define(e *etree.Element, l *Layer, label string, n int) {
	elem := fmt.Sprintf("Define #%d", n)
	m := p.attrs(e, label, elem, "name", "param", "type", "default")
	p.noChildren(e, label, elem)
	d := Define{Line: p.line(e)}
	bad := false
	if v, ok := p.required(e, m, label, elem, "name"); ok {
		d.Name = strings.TrimSpace(v)
		elem = fmt.Sprintf("Define %q", d.Name)
		macro, _, _ := strings.Cut(d.Name, " ")
		macro, _, _ = strings.Cut(macro, "\t")
		switch {
		case hasLineBreak(v):
			p.errorf(d.Line, label, elem, "name must not contain a line break")
		case !isIdent(macro):
			p.errorf(d.Line, label, elem, "name %q does not start with a valid macro name", macro)
		}
	} else {
		bad = true
	}
	if v, ok := m["param"]; ok {
		if strings.TrimSpace(v) == "" {
			p.errorf(d.Line, label, elem, "attribute %q is empty", "param")
		}
		d.Param = strings.TrimSpace(v)
	}
	if v, ok := m["type"]; ok {
		switch t := DefineType(strings.ToLower(strings.TrimSpace(v))); t {
		case Int, Float, IntArray, FloatArray:
			d.Type = t
		default:
			p.errorf(d.Line, label, elem, "unknown type %q (must be int, float, int[] or float[])", v)
			bad = true
		}
	}
	if v, ok := m["default"]; ok {
		d.Default, d.HasDefault = v, true
		if hasLineBreak(v) {
			p.errorf(d.Line, label, elem, "default must not contain a line break")
		} else if !bad {
			if _, err := ParseDefineValue(d.Type, v); err != nil {
				p.errorf(d.Line, label, elem, "default %q: %v", v, err)
			}
		}
	}
	l.Defines = append(l.Defines, d)
}

// ParseDefineValue checks a textual define value against t and returns its elements:
// one for a scalar type, one or more comma-separated ones for an array type (in
// that case surrounding braces are allowed), and the text itself for Untyped. Integers
// are decimal; floats may carry a C 'f' suffix.
func ParseDefineValue(t DefineType, s string) ([]string, error) {
	if t == Untyped {
		return []string{s}, nil
	}
	text := strings.TrimSpace(s)
	var parts []string
	if t.IsArray() {
		if strings.HasPrefix(text, "{") && strings.HasSuffix(text, "}") {
			text = strings.TrimSpace(text[1 : len(text)-1])
		}
		if text == "" {
			return nil, nil
		}
		parts = strings.Split(text, ",")
		if strings.TrimSpace(parts[len(parts)-1]) == "" { // a trailing comma, as in C
			parts = parts[:len(parts)-1]
		}
	} else {
		parts = []string{text}
	}
	for i, part := range parts {
		part = strings.TrimSpace(part)
		parts[i] = part
		switch t.Elem() {
		case Int:
			if _, err := strconv.ParseInt(part, 10, 64); err != nil {
				return nil, fmt.Errorf("%q is not an integer", part)
			}
		case Float:
			if _, err := ParseFloat(part); err != nil {
				return nil, err
			}
		}
	}
	return parts, nil
}

// ParseFloat parses a decimal float as written in a config or on a command line,
// accepting C's f suffix ("0.5f").
func ParseFloat(s string) (float64, error) {
	t := strings.TrimSpace(s)
	if n := len(t); n > 1 && (t[n-1] == 'f' || t[n-1] == 'F') && (t[n-2] == '.' || (t[n-2] >= '0' && t[n-2] <= '9')) {
		t = t[:n-1]
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if strings.ContainsAny(t, "xXpP_") { // hex floats and digit separators: not C-portable in configs
		return 0, fmt.Errorf("%q is not a decimal number", s)
	}
	return v, nil
}
