// Package openvino reads OpenVINO IR (the .xml topology and .bin weights that OpenVINO's
// serializer writes, IR versions 10 and 11) into clhost's in-memory model.
//
// IR operations become the layers the ONNX importer produces for the same computation
// (Convolution → Conv, MaxPool → MaxPool with ONNX's attribute names, StridedSlice →
// Slice, ...), so shape inference, the graph passes and the built-in kernels work on them
// unchanged. What only decides shapes is computed when the model loads: ShapeOf and the
// integer arithmetic after it, PriorBox and PriorBoxClustered, constant Reshape targets,
// f16-compressed weights (a Const f16 followed by a Convert marked "decompression") made
// float32. A layer whose type a custom layer implements (Options.Custom) keeps its IR type,
// its inputs and its <data> attributes, typed, as the parameters its kernel's defines
// read; its output shapes are the dims its ports declare.
//
// Every port's declared dims are checked against clhost's shape inference as the layers
// are read. Dynamic dims (-1, ?) take Options.Batch in dim 0 of an input (1 by default)
// and Options.InputShapes elsewhere; a fixed batch is kept, and the host rebatches the
// model as it does a native one.
package openvino

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/clhost/clhost/model"
)

// Options tune how an IR is read. The zero value is the default.
type Options struct {
	// Batch is the size of a dynamic dim 0 of the inputs; 0 means 1.
	Batch int
	// InputShapes give the whole shape of named inputs; their dynamic dims take it. The
	// key "" stands for the only input of a single-input model.
	InputShapes map[string][]int
	// Custom says which layer types a user's custom layer implements: such layers keep
	// the IR's type, inputs and attributes, and override a built-in of the same name.
	Custom func(typ string) bool
	// Weights is the .bin file; "" means the .xml's path with the extension .bin.
	Weights string
	// KeepUnknown reads a layer whose type neither a mapping nor Custom implements as a
	// custom layer is read (its IR type, inputs, <data> attributes and port shapes)
	// rather than refusing the model, so that it can be looked at before its
	// configurations are written. Running it still needs them.
	KeepUnknown bool
}

// Load reads the IR at path (its weights from Options.Weights or the .bin beside it).
func Load(path string) (*model.Model, error) { return Options{}.Load(path) }

// Load reads the IR at path. Errors name the file.
func (o Options) Load(path string) (*model.Model, error) {
	x, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	wpath := o.Weights
	if wpath == "" {
		wpath = strings.TrimSuffix(path, filepath.Ext(path)) + ".bin"
	}
	var bin []byte
	net, err := parse(x)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if net.needsWeights() {
		if bin, err = os.ReadFile(wpath); err != nil {
			switch {
			case errors.Is(err, os.ErrNotExist) && o.Weights == "":
				return nil, fmt.Errorf("%s: the weights file %s is missing: it lies beside the .xml under the same name, or --weights FILE names another", path, wpath)
			case errors.Is(err, os.ErrNotExist):
				// The user named this file: telling them how to name one helps nobody.
				return nil, fmt.Errorf("%s: the weights file %s is missing", path, wpath)
			}
			return nil, fmt.Errorf("%s: weights: %w", path, err)
		}
	}
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	m, err := o.build(net, bin, name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// Decode reads an IR held in memory: the .xml text and the .bin data. name labels errors.
func (o Options) Decode(xmlText, bin []byte, name string) (*model.Model, error) {
	if name == "" {
		name = "OpenVINO IR"
	}
	net, err := parse(xmlText)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	m, err := o.build(net, bin, strings.TrimSuffix(filepath.Base(name), filepath.Ext(name)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return m, nil
}

// IsIR says whether an .xml file's text is an IR: its root element is <net>. A custom
// layer configuration, the other kind of .xml clhost reads, has <CustomLayer> or
// <CustomLayers>.
func IsIR(xmlText []byte) bool { return ReaderIsIR(bytes.NewReader(xmlText)) }

// ReaderIsIR is IsIR of the text r reads, read only up to the root element however long
// the comments and processing instructions before it are.
func ReaderIsIR(r io.Reader) bool {
	d := xml.NewDecoder(r)
	for {
		tok, err := d.Token()
		if err != nil {
			return false
		}
		if se, ok := tok.(xml.StartElement); ok {
			return se.Name.Local == "net"
		}
	}
}

// The XML form of an IR, as the serializer writes it. Unknown elements (rt_info at the
// net's level, meta_data, quantization_info) are skipped by encoding/xml.
type xmlNet struct {
	XMLName xml.Name   `xml:"net"`
	Name    string     `xml:"name,attr"`
	Version string     `xml:"version,attr"`
	Layers  []xmlLayer `xml:"layers>layer"`
	Edges   []xmlEdge  `xml:"edges>edge"`
}

type xmlLayer struct {
	ID      string    `xml:"id,attr"`
	Name    string    `xml:"name,attr"`
	Type    string    `xml:"type,attr"`
	Version string    `xml:"version,attr"`
	Data    *xmlData  `xml:"data"`
	RT      []xmlRT   `xml:"rt_info>attribute"`
	Inputs  []xmlPort `xml:"input>port"`
	Outputs []xmlPort `xml:"output>port"`

	id   int
	data map[string]string
}

type xmlData struct {
	Attrs []xml.Attr `xml:",any,attr"`
}

type xmlRT struct {
	Name string `xml:"name,attr"`
}

type xmlPort struct {
	ID        string   `xml:"id,attr"`
	Precision string   `xml:"precision,attr"`
	Names     string   `xml:"names,attr"`
	Dims      []string `xml:"dim"`

	id   int
	dims []int // -1 for a dynamic dim
}

type xmlEdge struct {
	FromLayer string `xml:"from-layer,attr"`
	FromPort  string `xml:"from-port,attr"`
	ToLayer   string `xml:"to-layer,attr"`
	ToPort    string `xml:"to-port,attr"`
}

// parse reads the XML and checks what each element must have: ids that are numbers,
// dims that are sizes, a known IR version.
func parse(x []byte) (*xmlNet, error) {
	var net xmlNet
	if err := xml.Unmarshal(x, &net); err != nil {
		if errors.Is(err, io.EOF) {
			// encoding/xml says only "EOF" for a file with no element at all.
			return nil, errors.New("not an OpenVINO IR: the file holds no XML element (it is empty or not XML)")
		}
		var se *xml.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("malformed XML at line %d: %s", se.Line, se.Msg)
		}
		if strings.Contains(err.Error(), "expected element type <net>") {
			if strings.Contains(err.Error(), "<CustomLayer") {
				// The other .xml clhost reads, given in the model's place.
				return nil, errors.New("not an OpenVINO IR but a custom-layer configuration (its root element is <CustomLayer> or <CustomLayers>): give it with -c, and the IR's .xml, whose root element is <net>, with -m")
			}
			return nil, fmt.Errorf("not an OpenVINO IR: the root element is not <net> (%v)", err)
		}
		return nil, fmt.Errorf("malformed XML: %w", err)
	}
	switch net.Version {
	case "10", "11":
	case "":
		return nil, errors.New("<net> has no version attribute; clhost reads IR versions 10 and 11")
	default:
		return nil, fmt.Errorf("IR version %q: clhost reads IR versions 10 and 11 (older ones are the Model Optimizer's legacy form: convert the model again with a recent OpenVINO)", net.Version)
	}
	if len(net.Layers) == 0 {
		return nil, errors.New("the IR has no layers")
	}
	for i := range net.Layers {
		l := &net.Layers[i]
		id, err := strconv.Atoi(strings.TrimSpace(l.ID))
		if err != nil || id < 0 {
			return nil, fmt.Errorf("layer %q (%s): id %q is not a number", l.Name, l.Type, l.ID)
		}
		l.id = id
		if l.Type == "" {
			return nil, fmt.Errorf("%s has no type", l.desc())
		}
		l.data = map[string]string{}
		if l.Data != nil {
			for _, a := range l.Data.Attrs {
				l.data[a.Name.Local] = a.Value
			}
		}
		for _, ports := range [][]xmlPort{l.Inputs, l.Outputs} {
			for k := range ports {
				p := &ports[k]
				if p.id, err = strconv.Atoi(strings.TrimSpace(p.ID)); err != nil || p.id < 0 {
					return nil, fmt.Errorf("%s: port id %q is not a number", l.desc(), p.ID)
				}
				p.dims = make([]int, len(p.Dims))
				for d, s := range p.Dims {
					if p.dims[d], err = parseDim(s); err != nil {
						return nil, fmt.Errorf("%s: port %d: dim %d: %v", l.desc(), p.id, d, err)
					}
				}
			}
		}
	}
	return &net, nil
}

// parseDim reads one <dim>: a size, or -1 or ? for a dynamic one. A range (1..8, as the
// serializer writes bounded dims) is dynamic too.
func parseDim(s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "?" || s == "-1" || strings.Contains(s, "..") {
		return -1, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 || v > maxDim {
		return 0, fmt.Errorf("%q is not a size", s)
	}
	return v, nil
}

func (l *xmlLayer) desc() string {
	return fmt.Sprintf("layer %s %q (%s)", l.ID, l.Name, l.Type)
}

// needsWeights says whether some Const reads the .bin.
func (n *xmlNet) needsWeights() bool {
	for i := range n.Layers {
		if n.Layers[i].Type == "Const" {
			return true
		}
	}
	return false
}

// portNames splits a port's names attribute: names are separated by commas, and a
// comma inside a name is written "\,".
func portNames(s string) []string {
	var out []string
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == ',':
			b.WriteByte(',')
			i++
		case s[i] == ',':
			if n := strings.TrimSpace(b.String()); n != "" {
				out = append(out, n)
			}
			b.Reset()
		default:
			b.WriteByte(s[i])
		}
	}
	if n := strings.TrimSpace(b.String()); n != "" {
		out = append(out, n)
	}
	return out
}
