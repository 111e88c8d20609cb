package model

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/clhost/clhost/internal/modelfb"
)

const (
	// FileIdentifier marks a clhost model file (bytes 4 to 8 of the file).
	FileIdentifier = "CLHM"
	// FormatVersion is the version of the file layout this package writes and reads.
	FormatVersion = 1
	// FileExt is the usual extension of a model file.
	FileExt = ".clm"

	// maxFileSize is the FlatBuffers limit: offsets are 32-bit and the Go runtime treats
	// positions as below 1<<31.
	maxFileSize = math.MaxInt32
)

// Load reads and checks a model file.
func Load(path string) (*Model, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err // *PathError already names the file and the operation
	}
	return Decode(data, path)
}

// Decode checks and reads a model file held in memory; name says where it came from in
// errors. Every offset is checked before use and then the model is validated, so a
// malformed file yields an *Error, never a panic. The constant data of the returned model
// refers to data, which must not be modified afterwards.
func Decode(data []byte, name string) (m *Model, err error) {
	if name == "" {
		name = "model data"
	}
	defer func() {
		// The verifier is meant to make this unreachable; the tests and the fuzz target
		// check that it is, and a reader of untrusted files still must not crash.
		if r := recover(); r != nil {
			m, err = nil, &Error{Source: name, Problems: []string{fmt.Sprintf("corrupt file: unreadable structure (%v)", r)}}
		}
	}()
	corrupt := func(format string, args ...any) error {
		return &Error{Source: name, Problems: []string{"corrupt file: " + fmt.Sprintf(format, args...)}}
	}
	if len(data) < 8 || string(data[4:8]) != FileIdentifier {
		if other := otherForm(data, name); other != "" {
			return nil, &Error{Source: name, Problems: []string{other}}
		}
	}
	switch {
	case len(data) < 8:
		return nil, corrupt("%d bytes is too short for a clhost model", len(data))
	case string(data[4:8]) != FileIdentifier:
		return nil, &Error{Source: name, Problems: []string{fmt.Sprintf("not a clhost model: file identifier %q, want %q", data[4:8], FileIdentifier)}}
	case len(data) > maxFileSize:
		return nil, corrupt("%d bytes is more than a model file can hold (%d)", len(data), maxFileSize)
	}
	v := newVerifier(data)
	root := v.u32(0)
	// The version is read before the rest is checked so that a file from a newer clhost is
	// reported as such rather than as damage.
	h, err := v.header(root, "model")
	if err != nil {
		return nil, corrupt("%v", err)
	}
	version := int64(0)
	if fo := v.field(h, 0); fo != 0 {
		if fo+4 > h.tableLen {
			return nil, corrupt("model.format_version: field runs past its table")
		}
		version = v.u32(root + fo)
	}
	switch {
	case version == 0:
		return nil, corrupt("format version is missing")
	case version != FormatVersion:
		return nil, &Error{Source: name, Problems: []string{fmt.Sprintf("format version %d is not the one this clhost reads (%d): convert the model with a matching clhost", version, FormatVersion)}}
	}
	if err := v.table(root, modelSpec, "model"); err != nil {
		return nil, corrupt("%v", err)
	}
	m = decodeModel(modelfb.GetRootAsModel(data, 0))
	if err := validate(m, name); err != nil {
		return nil, err
	}
	return m, nil
}

// otherForm names the other model form a file that is not a clhost model seems to be in,
// with the loader that reads it, or returns "" when it seems to be in none.
func otherForm(data []byte, name string) string {
	ext := strings.ToLower(filepath.Ext(name))
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	switch {
	// An ONNX file is a protobuf ModelProto whose first field is ir_version (tag 0x08).
	case ext == ".onnx" || len(data) >= 2 && data[0] == 0x08 && data[1] > 0 && data[1] < 0x80:
		return "an ONNX model, not a clhost one: load it with host.LoadModel or onnx.Load"
	case ext == ".json" || len(trimmed) > 0 && trimmed[0] == '{':
		return "a model in JSON form, not a clhost file: load it with host.LoadModel or model.LoadJSON"
	}
	return ""
}

func decodeModel(r *modelfb.Model) *Model {
	m := &Model{Name: string(r.Name())}
	if n := r.TensorsLength(); n > 0 {
		m.Tensors = make([]Tensor, n)
		var t modelfb.Tensor
		for i := range n {
			r.Tensors(&t, i)
			m.Tensors[i] = decodeTensor(&t)
		}
	}
	if n := r.LayersLength(); n > 0 {
		m.Layers = make([]Layer, n)
		var l modelfb.Layer
		for i := range n {
			r.Layers(&l, i)
			m.Layers[i] = decodeLayer(&l)
		}
	}
	m.Inputs = decodeStrings(r.InputsLength(), r.Inputs)
	m.Outputs = decodeStrings(r.OutputsLength(), r.Outputs)
	return m
}

func decodeTensor(t *modelfb.Tensor) Tensor {
	out := Tensor{Name: string(t.Name()), Type: DataType(t.Type())}
	if n := t.ShapeLength(); n > 0 {
		out.Shape = make([]int, n)
		for k := range n {
			out.Shape[k] = int(t.Shape(k))
		}
	}
	if d := t.DataBytes(); d != nil {
		// Capacity clipped so that appending to one tensor's data cannot overwrite the next.
		out.Data = d[:len(d):len(d)]
	}
	return out
}

func decodeLayer(l *modelfb.Layer) Layer {
	out := Layer{
		Name:    string(l.Name()),
		Type:    string(l.Type()),
		Inputs:  decodeStrings(l.InputsLength(), l.Inputs),
		Outputs: decodeStrings(l.OutputsLength(), l.Outputs),
	}
	if n := l.AttrsLength(); n > 0 {
		out.Attrs = make([]Attr, n)
		var a modelfb.Attr
		for k := range n {
			l.Attrs(&a, k)
			out.Attrs[k] = decodeAttr(&a)
		}
	}
	return out
}

func decodeAttr(a *modelfb.Attr) Attr {
	out := Attr{Name: string(a.Name()), Kind: AttrKind(a.Kind())}
	switch out.Kind {
	case AttrInt:
		out.Int = a.I()
	case AttrFloat:
		out.Float = a.F()
	case AttrInts:
		out.Ints = make([]int64, a.IntsLength())
		for k := range out.Ints {
			out.Ints[k] = a.Ints(k)
		}
	case AttrFloats:
		out.Floats = make([]float32, a.FloatsLength())
		for k := range out.Floats {
			out.Floats[k] = a.Floats(k)
		}
	case AttrString:
		out.Str = string(a.S())
	}
	return out
}

func decodeStrings(n int, at func(int) []byte) []string {
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for k := range out {
		out[k] = string(at(k))
	}
	return out
}

// Encode validates a model and returns its file form.
func Encode(m *Model) ([]byte, error) {
	if err := Validate(m); err != nil {
		return nil, err
	}
	bound := encodedBound(m)
	if bound > maxFileSize {
		return nil, &Error{Source: memorySource(m), Problems: []string{fmt.Sprintf("too large for a model file: up to %d bytes, the format holds %d", bound, maxFileSize)}}
	}
	b := flatbuffers.NewBuilder(int(bound))

	tensors := make([]flatbuffers.UOffsetT, len(m.Tensors))
	for i := range m.Tensors {
		tensors[i] = encodeTensor(b, &m.Tensors[i])
	}
	layers := make([]flatbuffers.UOffsetT, len(m.Layers))
	for i := range m.Layers {
		layers[i] = encodeLayer(b, &m.Layers[i])
	}
	name := b.CreateString(m.Name)
	tv := offsetVector(b, tensors)
	lv := offsetVector(b, layers)
	iv := stringVector(b, m.Inputs)
	ov := stringVector(b, m.Outputs)

	modelfb.ModelStart(b)
	modelfb.ModelAddFormatVersion(b, FormatVersion)
	modelfb.ModelAddName(b, name)
	modelfb.ModelAddTensors(b, tv)
	modelfb.ModelAddLayers(b, lv)
	modelfb.ModelAddInputs(b, iv)
	modelfb.ModelAddOutputs(b, ov)
	b.FinishWithFileIdentifier(modelfb.ModelEnd(b), []byte(FileIdentifier))
	return b.FinishedBytes(), nil
}

// encodedBound is an upper bound of the encoded size: every string, vector and table with
// generous room for its header, vtable and alignment padding. The flatbuffers builder panics
// past 2 GiB, so Encode refuses a model before it gets there.
func encodedBound(m *Model) int64 {
	const slack = 64
	str := func(s string) int64 { return int64(len(s)) + slack }
	strs := func(l []string) int64 {
		n := int64(slack)
		for _, s := range l {
			n += str(s) + 4
		}
		return n
	}
	n := int64(slack) + str(m.Name) + strs(m.Inputs) + strs(m.Outputs)
	for i := range m.Tensors {
		t := &m.Tensors[i]
		n += 4*slack + str(t.Name) + 8*int64(len(t.Shape)) + int64(len(t.Data))
	}
	for i := range m.Layers {
		l := &m.Layers[i]
		n += 4*slack + str(l.Name) + str(l.Type) + strs(l.Inputs) + strs(l.Outputs)
		for k := range l.Attrs {
			a := &l.Attrs[k]
			n += 4*slack + str(a.Name) + str(a.Str) + 8*int64(len(a.Ints)) + 4*int64(len(a.Floats))
		}
	}
	return n
}

func encodeTensor(b *flatbuffers.Builder, t *Tensor) flatbuffers.UOffsetT {
	name := b.CreateString(t.Name)
	var shape, data flatbuffers.UOffsetT
	if len(t.Shape) > 0 {
		modelfb.TensorStartShapeVector(b, len(t.Shape))
		for k := len(t.Shape) - 1; k >= 0; k-- {
			b.PrependInt64(int64(t.Shape[k]))
		}
		shape = b.EndVector(len(t.Shape))
	}
	if t.IsConst() {
		data = b.CreateByteVector(t.Data)
	}
	modelfb.TensorStart(b)
	modelfb.TensorAddName(b, name)
	modelfb.TensorAddType(b, modelfb.DataType(t.Type))
	if len(t.Shape) > 0 {
		modelfb.TensorAddShape(b, shape)
	}
	if t.IsConst() {
		modelfb.TensorAddData(b, data)
	}
	return modelfb.TensorEnd(b)
}

func encodeLayer(b *flatbuffers.Builder, l *Layer) flatbuffers.UOffsetT {
	attrs := make([]flatbuffers.UOffsetT, len(l.Attrs))
	for k := range l.Attrs {
		attrs[k] = encodeAttr(b, &l.Attrs[k])
	}
	name := b.CreateString(l.Name)
	typ := b.CreateString(l.Type)
	in := stringVector(b, l.Inputs)
	out := stringVector(b, l.Outputs)
	av := offsetVector(b, attrs)
	modelfb.LayerStart(b)
	modelfb.LayerAddName(b, name)
	modelfb.LayerAddType(b, typ)
	modelfb.LayerAddInputs(b, in)
	modelfb.LayerAddOutputs(b, out)
	modelfb.LayerAddAttrs(b, av)
	return modelfb.LayerEnd(b)
}

// encodeAttr writes only the field the kind names, so a file never holds stale values.
func encodeAttr(b *flatbuffers.Builder, a *Attr) flatbuffers.UOffsetT {
	name := b.CreateString(a.Name)
	var vec flatbuffers.UOffsetT
	switch a.Kind {
	case AttrInts:
		modelfb.AttrStartIntsVector(b, len(a.Ints))
		for k := len(a.Ints) - 1; k >= 0; k-- {
			b.PrependInt64(a.Ints[k])
		}
		vec = b.EndVector(len(a.Ints))
	case AttrFloats:
		modelfb.AttrStartFloatsVector(b, len(a.Floats))
		for k := len(a.Floats) - 1; k >= 0; k-- {
			b.PrependFloat32(a.Floats[k])
		}
		vec = b.EndVector(len(a.Floats))
	case AttrString:
		vec = b.CreateString(a.Str)
	}
	modelfb.AttrStart(b)
	modelfb.AttrAddName(b, name)
	modelfb.AttrAddKind(b, modelfb.AttrKind(a.Kind))
	switch a.Kind {
	case AttrInt:
		modelfb.AttrAddI(b, a.Int)
	case AttrFloat:
		modelfb.AttrAddF(b, a.Float)
	case AttrInts:
		modelfb.AttrAddInts(b, vec)
	case AttrFloats:
		modelfb.AttrAddFloats(b, vec)
	case AttrString:
		modelfb.AttrAddS(b, vec)
	}
	return modelfb.AttrEnd(b)
}

func stringVector(b *flatbuffers.Builder, l []string) flatbuffers.UOffsetT {
	offs := make([]flatbuffers.UOffsetT, len(l))
	for k, s := range l {
		offs[k] = b.CreateString(s)
	}
	return offsetVector(b, offs)
}

func offsetVector(b *flatbuffers.Builder, offs []flatbuffers.UOffsetT) flatbuffers.UOffsetT {
	b.StartVector(4, len(offs), 4)
	for k := len(offs) - 1; k >= 0; k-- {
		b.PrependUOffsetT(offs[k])
	}
	return b.EndVector(len(offs))
}

// Save validates a model and writes it to path. It writes a temporary file beside path and
// renames it, so a failed save never leaves a half-written model behind.
func Save(m *Model, path string) error {
	data, err := Encode(m)
	if err != nil {
		return fmt.Errorf("saving %s: %w", path, err)
	}
	return writeFileAtomic(path, data)
}

func writeFileAtomic(path string, data []byte) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("saving %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			os.Remove(f.Name())
		}
	}()
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		return fmt.Errorf("saving %s: %w", path, err)
	}
	// CreateTemp makes the file private; a model is an ordinary document.
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return fmt.Errorf("saving %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("saving %s: %w", path, err)
	}
	return nil
}
