package customlayer

import (
	"bytes"
	"encoding/xml"
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

	"github.com/clhost/clhost/jit/formula"
)

// MaxFileSize bounds a configuration or kernel source file. Real ones are a few KiB;
// the limit turns a wrong path (a model, a disk image) into a clear error.
const MaxFileSize = 64 << 20

// MaxDepth bounds element nesting. A valid file nests 4 levels deep; the limit keeps
// pathological files cheap.
const MaxDepth = 64

// Options say where the kernel sources of a configuration are read from.
type Options struct {
	// FS holds the sources; nil means the operating system's file system.
	FS fs.FS
	// Dir is the folder relative source paths are resolved against. Empty means the
	// folder of the configuration's name. In an FS, an absolute source path ("/k.cl")
	// is taken from the FS root.
	Dir string
}

// Load reads the configuration file at path; sources are resolved relative to its folder.
func Load(name string) ([]*Layer, error) {
	data, err := readLimited(func() (io.ReadCloser, error) { return os.Open(name) })
	if err != nil {
		return nil, Errors{{File: name, Msg: "cannot read: " + describeIOError(err)}}
	}
	return Parse(name, data, Options{})
}

// LoadFS reads the configuration file name from fsys, with its sources from the same
// FS relative to name's folder (so a program can go:embed its configs and kernels).
func LoadFS(fsys fs.FS, name string) ([]*Layer, error) {
	data, err := readLimited(func() (io.ReadCloser, error) { return fsys.Open(name) })
	if err != nil {
		return nil, Errors{{File: name, Msg: "cannot read: " + describeIOError(err)}}
	}
	return Parse(name, data, Options{FS: fsys})
}

// Parse reads a configuration held in data. name identifies it in messages and, unless
// opt.Dir is set, gives the folder of its sources. On any problem it returns nil and an
// Errors listing every problem found.
func Parse(name string, data []byte, opt Options) (layers []*Layer, err error) {
	p := &parser{file: name, opt: opt}
	if p.opt.Dir == "" {
		if opt.FS != nil {
			p.opt.Dir = path.Dir(name)
		} else {
			p.opt.Dir = filepath.Dir(name)
		}
	}
	defer func() {
		// The parser is written not to panic; this is the last line of defence so a
		// bad file can never take the process down.
		if r := recover(); r != nil {
			layers, err = nil, Errors{{File: name, Msg: fmt.Sprintf("internal error while reading the file: %v", r)}}
		}
	}()
	layers = p.parse(data)
	if len(p.errs) > 0 {
		return nil, p.errs
	}
	return layers, nil
}

func readLimited(open func() (io.ReadCloser, error)) ([]byte, error) {
	f, err := open()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("larger than %d MiB", MaxFileSize>>20)
	}
	return data, nil
}

// describeIOError drops the operation and path that *fs.PathError repeats, since the
// message already names the file.
func describeIOError(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

type parser struct {
	file  string
	opt   Options
	lines map[*etree.Element]int
	errs  Errors
}

func (p *parser) errorf(line int, layer, elem, format string, args ...any) {
	p.errs = append(p.errs, &Error{File: p.file, Line: line, Layer: layer, Element: elem, Msg: fmt.Sprintf(format, args...)})
}

func (p *parser) line(e *etree.Element) int { return p.lines[e] }

func passThroughCharset(_ string, r io.Reader) (io.Reader, error) { return r, nil }

// scanLines checks that data is well-formed XML and returns the line of each start
// element in document order. etree keeps no positions, so lines come from this pass
// and are matched to etree's elements by their order, which is the same.
func (p *parser) scanLines(data []byte) ([]int, bool) {
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = true
	dec.CharsetReader = passThroughCharset
	var lines []int
	depth := 0
	for {
		line, _ := dec.InputPos()
		tok, err := dec.Token()
		if err == io.EOF {
			return lines, true
		}
		if err != nil {
			var se *xml.SyntaxError
			if errors.As(err, &se) {
				p.errorf(se.Line, "", "", "malformed XML: %s", se.Msg)
			} else {
				l, _ := dec.InputPos()
				p.errorf(l, "", "", "malformed XML: %v", err)
			}
			return nil, false
		}
		switch tok.(type) {
		case xml.StartElement:
			depth++
			if depth > MaxDepth {
				p.errorf(line, "", "", "elements nested more than %d levels deep", MaxDepth)
				return nil, false
			}
			lines = append(lines, line)
		case xml.EndElement:
			depth--
		}
	}
}

func (p *parser) parse(data []byte) []*Layer {
	if len(data) > MaxFileSize {
		p.errorf(0, "", "", "larger than %d MiB", MaxFileSize>>20)
		return nil
	}
	if len(bytes.TrimSpace(data)) == 0 {
		p.errorf(0, "", "", "the file is empty (expected CustomLayer elements)")
		return nil
	}
	lines, ok := p.scanLines(data)
	if !ok {
		return nil
	}
	doc := etree.NewDocument()
	doc.ReadSettings.CharsetReader = passThroughCharset
	doc.ReadSettings.PreserveDuplicateAttrs = true
	doc.ReadSettings.MaxDepth = MaxDepth + 1
	if err := doc.ReadFromBytes(data); err != nil {
		p.errorf(0, "", "", "malformed XML: %v", err)
		return nil
	}
	p.lines = make(map[*etree.Element]int, len(lines))
	stack := []*etree.Element{&doc.Element}
	i := -1 // the document node is not a start element
	for len(stack) > 0 {
		e := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if i >= 0 && i < len(lines) {
			p.lines[e] = lines[i]
		}
		i++
		kids := e.ChildElements()
		for k := len(kids) - 1; k >= 0; k-- {
			stack = append(stack, kids[k])
		}
	}

	top := doc.ChildElements()
	var layerElems []*etree.Element
	switch {
	case len(top) == 0:
		p.errorf(0, "", "", "no XML element in the file (expected CustomLayer elements)")
		return nil
	case len(top) == 1 && !isTag(top[0], "CustomLayer"):
		// One wrapping root element.
		for _, c := range top[0].ChildElements() {
			if isTag(c, "CustomLayer") {
				layerElems = append(layerElems, c)
			} else {
				p.errorf(p.line(c), "", "", "unexpected element <%s> under <%s> (expected CustomLayer)", c.FullTag(), top[0].FullTag())
			}
		}
		if len(layerElems) == 0 && len(p.errs) == 0 {
			p.errorf(p.line(top[0]), "", "", "no CustomLayer element under <%s>", top[0].FullTag())
		}
	default:
		for _, c := range top {
			if isTag(c, "CustomLayer") {
				layerElems = append(layerElems, c)
			} else {
				p.errorf(p.line(c), "", "", "unexpected top-level element <%s> (expected CustomLayer)", c.FullTag())
			}
		}
	}

	var layers []*Layer
	seen := map[string]*Layer{}
	for i, e := range layerElems {
		l := p.layer(e, i+1)
		if l == nil {
			continue
		}
		if prev, dup := seen[l.Name]; dup {
			p.errorf(l.Line, fmt.Sprintf("layer %q", l.Name), "", "defined twice in this file (first at line %d)", prev.Line)
			continue
		}
		seen[l.Name] = l
		layers = append(layers, l)
	}
	return layers
}

func isTag(e *etree.Element, tag string) bool { return e.Space == "" && e.Tag == tag }

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

func (p *parser) layer(e *etree.Element, idx int) *Layer {
	before := len(p.errs)
	label := fmt.Sprintf("CustomLayer #%d", idx)
	if a := e.SelectAttr("name"); a != nil && a.Space == "" && strings.TrimSpace(a.Value) != "" {
		label = fmt.Sprintf("layer %q", a.Value)
	}
	l := &Layer{Origin: p.file, Line: p.line(e)}
	m := p.attrs(e, label, "", "name", "type", "version")
	if v, ok := p.required(e, m, label, "", "name"); ok {
		l.Name = v
		if v != strings.TrimSpace(v) || hasLineBreak(v) {
			p.errorf(l.Line, label, "", "name %q has leading or trailing spaces", v)
		}
	}
	if v, ok := p.required(e, m, label, "", "type"); ok {
		if v != "SimpleGPU" {
			p.errorf(l.Line, label, "", "type %q is not supported (must be \"SimpleGPU\")", v)
		}
		l.Type = v
	}
	if v, ok := p.required(e, m, label, "", "version"); ok {
		if strings.TrimSpace(v) != "1" {
			p.errorf(l.Line, label, "", "version %q is not supported (must be \"1\")", v)
		}
		l.Version = strings.TrimSpace(v)
	}

	var kernels, buffers, works []*etree.Element
	for _, c := range e.ChildElements() {
		switch {
		case isTag(c, "Kernel"):
			kernels = append(kernels, c)
		case isTag(c, "Buffers"):
			buffers = append(buffers, c)
		case isTag(c, "WorkSizes"):
			works = append(works, c)
		case isTag(c, "CompilerOptions"):
			elem := fmt.Sprintf("CompilerOptions #%d", len(l.CompilerOptions)+1)
			cm := p.attrs(c, label, elem, "options")
			if v, ok := cm["options"]; ok {
				l.CompilerOptions = append(l.CompilerOptions, v)
			} else {
				p.errorf(p.line(c), label, elem, "missing attribute %q", "options")
				l.CompilerOptions = append(l.CompilerOptions, "")
			}
			p.noChildren(c, label, elem)
		default:
			p.errorf(p.line(c), label, "", "unexpected element <%s> (expected Kernel, Buffers, CompilerOptions or WorkSizes)", c.FullTag())
		}
	}
	p.exactlyOne(e, kernels, label, "Kernel")
	p.exactlyOne(e, buffers, label, "Buffers")
	if len(kernels) > 0 {
		p.kernel(kernels[0], l, label)
	}
	if len(buffers) > 0 {
		p.buffers(buffers[0], l, label)
	}
	if len(works) > 1 {
		p.errorf(p.line(works[1]), label, "WorkSizes", "given %d times (at most once)", len(works))
	}
	if len(works) > 0 {
		p.workSizes(works[0], l, label)
	} else {
		l.WorkSizes.Global, _ = formula.ParseList(DefaultGlobal)
	}
	if len(p.errs) > before {
		return nil
	}
	return l
}

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

func (p *parser) kernel(e *etree.Element, l *Layer, label string) {
	m := p.attrs(e, label, "Kernel", "entry")
	if v, ok := p.required(e, m, label, "Kernel", "entry"); ok {
		if !isIdent(strings.TrimSpace(v)) {
			p.errorf(p.line(e), label, "Kernel", "entry %q is not a valid OpenCL C function name", v)
		}
		l.Entry = strings.TrimSpace(v)
	}
	nsrc := 0
	for _, c := range e.ChildElements() {
		switch {
		case isTag(c, "Source"):
			nsrc++
			p.source(c, l, label, nsrc)
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

func (p *parser) source(e *etree.Element, l *Layer, label string, n int) {
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
	src.Text = string(data)
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

func (p *parser) buffers(e *etree.Element, l *Layer, label string) {
	p.attrs(e, label, "Buffers")
	used := map[int]string{}
	type portKey struct {
		kind TensorKind
		port int
	}
	portFormat := map[portKey]Tensor{}
	portElem := map[portKey]string{}
	allOK := true
	count, ntensor, ndata, noutput := 0, 0, 0, 0
	claim := func(c *etree.Element, elem string, idx int) {
		if prev, dup := used[idx]; dup {
			p.errorf(p.line(c), label, elem, "arg-index %d is already used by %s", idx, prev)
			return
		}
		used[idx] = elem
	}
	for _, c := range e.ChildElements() {
		switch {
		case isTag(c, "Tensor"):
			count++
			ntensor++
			elem := fmt.Sprintf("Tensor #%d", ntensor)
			m := p.attrs(c, label, elem, "arg-index", "type", "port-index", "format")
			p.noChildren(c, label, elem)
			t := Tensor{Line: p.line(c)}
			ok := true
			idx, iok := p.index(c, m, label, elem, "arg-index")
			t.ArgIndex = idx
			if !iok {
				allOK, ok = false, false
			}
			if v, vok := p.required(c, m, label, elem, "type"); vok {
				switch strings.ToLower(strings.TrimSpace(v)) {
				case "input":
					t.Kind = Input
				case "output":
					t.Kind = Output
					noutput++
				default:
					p.errorf(t.Line, label, elem, "unknown tensor type %q (must be input or output)", v)
					ok = false
				}
			} else {
				ok = false
			}
			port, pok := p.index(c, m, label, elem, "port-index")
			t.Port = port
			ok = ok && pok
			if v, has := m["format"]; has {
				f, fok := ParseFormat(strings.TrimSpace(v))
				if !fok {
					p.errorf(t.Line, label, elem, "unknown format %q (must be BFYX, BYXF, YXFB, FYXB or ANY)", v)
					ok = false
				}
				t.Format = f
			}
			if iok {
				claim(c, elem, idx)
			}
			if ok {
				k := portKey{t.Kind, t.Port}
				if prev, seen := portFormat[k]; seen && prev.Format != t.Format {
					p.errorf(t.Line, label, elem, "%s port %d is also bound by %s with format %v; a port has one format", t.Kind, t.Port, portElem[k], prev.Format)
				} else if !seen {
					portFormat[k], portElem[k] = t, elem
				}
				l.Tensors = append(l.Tensors, t)
			}
		case isTag(c, "Data"):
			count++
			ndata++
			elem := fmt.Sprintf("Data #%d", ndata)
			m := p.attrs(c, label, elem, "name", "arg-index")
			p.noChildren(c, label, elem)
			d := Data{Line: p.line(c)}
			name, nok := p.required(c, m, label, elem, "name")
			if nok {
				d.Name = strings.TrimSpace(name)
				elem = fmt.Sprintf("Data %q", d.Name)
			}
			idx, iok := p.index(c, m, label, elem, "arg-index")
			d.ArgIndex = idx
			if !iok {
				allOK = false
			} else {
				claim(c, elem, idx)
			}
			if nok && iok {
				l.Data = append(l.Data, d)
			}
		default:
			p.errorf(p.line(c), label, "Buffers", "unexpected element <%s> (expected Tensor or Data)", c.FullTag())
		}
	}
	if ntensor == 0 {
		p.errorf(p.line(e), label, "Buffers", "no <Tensor> element (at least one is required)")
	} else if noutput == 0 && len(l.Tensors) == ntensor {
		p.errorf(p.line(e), label, "Buffers", "no Tensor of type output: the kernel would write nothing")
	}
	if allOK {
		for k := 0; k < count; k++ {
			if _, ok := used[k]; !ok {
				p.errorf(p.line(e), label, "Buffers", "gap in the arg-index sequence: no buffer has arg-index %d (the %d buffers must use 0 to %d)", k, count, count-1)
			}
		}
	}
}

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
