package model

import (
	"encoding/binary"
	"fmt"
)

// The flatbuffers Go runtime reads wherever offsets in the file point, so a damaged file
// would index past the buffer and panic. verifier walks the whole file against the schema
// first, checking every offset, length and vtable before the generated accessors touch it.
// Its field lists must follow model.fbs: slot i of a table is the i-th field declared there.

type fieldKind int

const (
	scalarField fieldKind = iota // fixed-size value stored inline in the table
	stringField
	vectorField  // vector of fixed-size scalars
	stringsField // vector of strings
	tablesField  // vector of tables
)

type fieldSpec struct {
	name     string
	kind     fieldKind
	size     int64      // scalar size, or element size of a vectorField
	table    *tableSpec // element table of a tablesField
	required bool
}

type tableSpec struct {
	name   string
	fields []fieldSpec
}

var (
	attrSpec = &tableSpec{name: "attribute", fields: []fieldSpec{
		{name: "name", kind: stringField, required: true},
		{name: "kind", kind: scalarField, size: 1},
		{name: "i", kind: scalarField, size: 8},
		{name: "f", kind: scalarField, size: 4},
		{name: "ints", kind: vectorField, size: 8},
		{name: "floats", kind: vectorField, size: 4},
		{name: "s", kind: stringField},
	}}
	tensorSpec = &tableSpec{name: "tensor", fields: []fieldSpec{
		{name: "name", kind: stringField, required: true},
		{name: "type", kind: scalarField, size: 1},
		{name: "shape", kind: vectorField, size: 8},
		{name: "data", kind: vectorField, size: 1},
	}}
	layerSpec = &tableSpec{name: "layer", fields: []fieldSpec{
		{name: "name", kind: stringField, required: true},
		{name: "type", kind: stringField, required: true},
		{name: "inputs", kind: stringsField},
		{name: "outputs", kind: stringsField},
		{name: "attrs", kind: tablesField, table: attrSpec},
	}}
	modelSpec = &tableSpec{name: "model", fields: []fieldSpec{
		{name: "format_version", kind: scalarField, size: 4},
		{name: "name", kind: stringField},
		{name: "tensors", kind: tablesField, table: tensorSpec},
		{name: "layers", kind: tablesField, table: layerSpec},
		{name: "inputs", kind: stringsField},
		{name: "outputs", kind: stringsField},
	}}
)

// verifier checks one buffer. work counts vector elements and string bytes visited; a
// file whose tables share sub-tables could otherwise make decoding allocate far more than
// its own size, so the total is capped at a multiple of the file size.
type verifier struct {
	buf   []byte
	work  int64
	limit int64
}

func newVerifier(buf []byte) *verifier {
	return &verifier{buf: buf, limit: 16*int64(len(buf)) + 1<<16}
}

func (v *verifier) size() int64 { return int64(len(v.buf)) }

func (v *verifier) u16(at int64) int64 { return int64(binary.LittleEndian.Uint16(v.buf[at:])) }
func (v *verifier) u32(at int64) int64 { return int64(binary.LittleEndian.Uint32(v.buf[at:])) }

// header is a table whose vtable and inline part lie inside the buffer.
type header struct {
	pos, vtable, vtableLen, tableLen int64
}

func (v *verifier) header(pos int64, path string) (header, error) {
	n := v.size()
	if pos < 0 || pos+4 > n {
		return header{}, fmt.Errorf("%s: table at offset %d lies outside the file (%d bytes)", path, pos, n)
	}
	vt := pos - int64(int32(binary.LittleEndian.Uint32(v.buf[pos:])))
	if vt < 0 || vt+4 > n {
		return header{}, fmt.Errorf("%s: vtable of the table at offset %d points to offset %d, outside the file (%d bytes)", path, pos, vt, n)
	}
	h := header{pos: pos, vtable: vt, vtableLen: v.u16(vt), tableLen: v.u16(vt + 2)}
	if h.vtableLen < 4 || h.vtableLen%2 != 0 || vt+h.vtableLen > n {
		return header{}, fmt.Errorf("%s: vtable at offset %d has a bad size %d", path, vt, h.vtableLen)
	}
	if h.tableLen < 4 || pos+h.tableLen > n {
		return header{}, fmt.Errorf("%s: table at offset %d claims %d bytes, running past the end of the file (%d bytes)", path, pos, h.tableLen, n)
	}
	return h, nil
}

// field returns the offset of a field inside its table, 0 when absent, exactly as the
// runtime's Table.Offset computes it.
func (v *verifier) field(h header, slot int) int64 {
	e := 4 + 2*int64(slot)
	if e >= h.vtableLen {
		return 0
	}
	return v.u16(h.vtable + e)
}

func (v *verifier) table(pos int64, spec *tableSpec, path string) error {
	h, err := v.header(pos, path)
	if err != nil {
		return err
	}
	for slot := range spec.fields {
		f := &spec.fields[slot]
		fo := v.field(h, slot)
		fpath := path + "." + f.name
		if fo == 0 {
			if f.required {
				return fmt.Errorf("%s: required field is missing", fpath)
			}
			continue
		}
		inline := f.size
		if f.kind != scalarField {
			inline = 4 // a uoffset to the string or vector
		}
		if fo+inline > h.tableLen {
			return fmt.Errorf("%s: field at offset %d of a %d-byte table runs past the table", fpath, fo, h.tableLen)
		}
		if f.kind == scalarField {
			continue
		}
		at := pos + fo
		target := at + v.u32(at)
		switch f.kind {
		case stringField:
			err = v.string(target, fpath)
		case vectorField:
			_, _, err = v.vector(target, f.size, fpath)
		case stringsField:
			err = v.strings(target, fpath)
		case tablesField:
			err = v.tables(target, f.table, fpath)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (v *verifier) spend(n int64, path string) error {
	v.work += n
	if v.work > v.limit {
		return fmt.Errorf("%s: the file's tables refer to the same data so often that reading it would take more than %d units of work for %d bytes", path, v.limit, v.size())
	}
	return nil
}

// vector checks a vector header and its elements' extent, returning the first element's
// offset and the element count.
func (v *verifier) vector(at, elemSize int64, path string) (start, count int64, err error) {
	n := v.size()
	if at+4 > n {
		return 0, 0, fmt.Errorf("%s: vector at offset %d lies outside the file (%d bytes)", path, at, n)
	}
	count = v.u32(at)
	start = at + 4
	if count*elemSize > n-start {
		return 0, 0, fmt.Errorf("%s: vector at offset %d of %d elements runs past the end of the file (%d bytes)", path, at, count, n)
	}
	return start, count, v.spend(count, path)
}

func (v *verifier) string(at int64, path string) error {
	start, length, err := v.vector(at, 1, path)
	if err != nil {
		return err
	}
	end := start + length
	if end >= v.size() || v.buf[end] != 0 {
		return fmt.Errorf("%s: string at offset %d is not terminated", path, at)
	}
	return nil
}

func (v *verifier) strings(at int64, path string) error {
	start, count, err := v.vector(at, 4, path)
	if err != nil {
		return err
	}
	for k := range count {
		e := start + 4*k
		if err := v.string(e+v.u32(e), fmt.Sprintf("%s[%d]", path, k)); err != nil {
			return err
		}
	}
	return nil
}

func (v *verifier) tables(at int64, spec *tableSpec, path string) error {
	start, count, err := v.vector(at, 4, path)
	if err != nil {
		return err
	}
	for k := range count {
		e := start + 4*k
		if err := v.table(e+v.u32(e), spec, fmt.Sprintf("%s[%d]", path, k)); err != nil {
			return err
		}
	}
	return nil
}
