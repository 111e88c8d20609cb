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
	"strings"

	"github.com/beevik/etree"

	"github.com/clhost/clhost/customlayer/formula"
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
