// Package tensorio reads and writes tensors as NumPy .npy files, the exchange format of
// `clhost run` (-i inputs, -o outputs, --dump-tensors).
package tensorio

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"strconv"
	"strings"

	"github.com/sbinet/npyio/npy"
)

// maxFileBytes bounds what ReadFile loads, so a hostile file cannot exhaust memory.
const maxFileBytes = 4 << 30

// Array is a decoded .npy file: float32 data in C order whatever the file held.
type Array struct {
	Shape []int
	Data  []float32
	// DType is the element type the file stored (e.g. "<f4", "<i8"), for messages.
	DType string
}

// ReadFile reads a .npy file and converts its elements to float32, reordering a
// Fortran-order array to C order. Errors name the file.
func ReadFile(path string) (*Array, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > maxFileBytes {
		return nil, fmt.Errorf("%s: %d bytes is more than the %d-byte limit for .npy inputs", path, st.Size(), int64(maxFileBytes))
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	a, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

// Decode parses .npy bytes.
func Decode(data []byte) (a *Array, err error) {
	// The npyio reader slices its header without bounds checks; a malformed header must
	// come back as an error, never as a crash of the caller.
	defer func() {
		if r := recover(); r != nil {
			a, err = nil, fmt.Errorf("not a valid .npy file: malformed header (%v)", r)
		}
	}()
	if len(data) < 10 || !bytes.Equal(data[:6], npy.Magic[:]) {
		return nil, errors.New("not a .npy file: missing the \\x93NUMPY magic")
	}
	// Check the declared header length before npyio allocates it.
	var hdrLen, pre int
	switch data[6] {
	case 1:
		hdrLen, pre = int(data[8])|int(data[9])<<8, 10
	case 2, 3:
		if len(data) < 12 {
			return nil, errors.New("not a valid .npy file: truncated header")
		}
		hdrLen, pre = int(data[8])|int(data[9])<<8|int(data[10])<<16|int(data[11])<<24, 12
	default:
		return nil, fmt.Errorf("unsupported .npy format version %d", data[6])
	}
	if hdrLen <= 0 || pre+hdrLen > len(data) {
		return nil, fmt.Errorf("not a valid .npy file: header of %d bytes in a %d-byte file", hdrLen, len(data))
	}
	if !bytes.Contains(data[pre:pre+hdrLen], []byte("\n")) || !bytes.Contains(data[pre:pre+hdrLen], []byte("}")) {
		return nil, errors.New("not a valid .npy file: header is not a terminated dictionary")
	}
	if data[6] == 3 {
		data = append([]byte{}, data...)
		data[6] = 2 // version 3 only differs by allowing utf-8 in the header
	}
	r, err := npy.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("not a valid .npy file: %w", err)
	}
	d := r.Header.Descr
	rt := npy.TypeFrom(d.Type)
	if rt == nil {
		return nil, fmt.Errorf("unsupported element type %q", d.Type)
	}
	switch rt.Kind() {
	case reflect.Float32, reflect.Float64, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Bool:
	default:
		return nil, fmt.Errorf("unsupported element type %q (want a float, int or bool array)", d.Type)
	}
	n := 1
	for _, s := range d.Shape {
		if s < 0 || (s > 0 && n > math.MaxInt32/s) {
			return nil, fmt.Errorf("invalid shape %v", d.Shape)
		}
		n *= s
	}
	payload := len(data) - pre - hdrLen
	if need := n * int(rt.Size()); payload < need {
		return nil, fmt.Errorf("shape %v of %s needs %d bytes of data, the file has %d", d.Shape, d.Type, need, payload)
	}
	a = &Array{Shape: append([]int{}, d.Shape...), DType: d.Type}
	if n == 0 {
		a.Data = []float32{}
		return a, nil
	}
	// Read in the file's own type, then convert: npyio refuses a type mismatch.
	ptr := reflect.New(reflect.SliceOf(rt))
	ptr.Elem().Set(reflect.MakeSlice(reflect.SliceOf(rt), n, n))
	if err := r.Read(ptr.Interface()); err != nil && err != io.EOF {
		return nil, fmt.Errorf("reading %s data: %w", d.Type, err)
	}
	a.Data = toFloat32(ptr.Elem())
	if d.Fortran && len(d.Shape) > 1 {
		a.Data = fortranToC(a.Data, d.Shape)
	}
	return a, nil
}

func toFloat32(v reflect.Value) []float32 {
	if f, ok := v.Interface().([]float32); ok {
		return f
	}
	out := make([]float32, v.Len())
	for i := range out {
		e := v.Index(i)
		switch e.Kind() {
		case reflect.Float32, reflect.Float64:
			out[i] = float32(e.Float())
		case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			out[i] = float32(e.Int())
		case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			out[i] = float32(e.Uint())
		case reflect.Bool:
			if e.Bool() {
				out[i] = 1
			}
		}
	}
	return out
}

// fortranToC reorders column-major data (first index fastest) to row-major.
func fortranToC(src []float32, shape []int) []float32 {
	dst := make([]float32, len(src))
	idx := make([]int, len(shape))
	for f := range src {
		// f is the Fortran offset of idx; compute its C offset.
		c := 0
		for d := 0; d < len(shape); d++ {
			c = c*shape[d] + idx[d]
		}
		dst[c] = src[f]
		for d := 0; d < len(shape); d++ {
			idx[d]++
			if idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
	}
	return dst
}

// Encode writes a float32 array as .npy version 1.0 in C order.
//
// The header is written here rather than by npyio because npyio's writer records only a
// 1-D shape for Go slices, and outputs must keep their N-D shape.
func Encode(w io.Writer, shape []int, data []float32) error {
	n := 1
	for _, s := range shape {
		n *= s
	}
	if n != len(data) {
		return fmt.Errorf("shape %v holds %d elements, data has %d", shape, n, len(data))
	}
	dims := make([]string, len(shape))
	for i, s := range shape {
		dims[i] = strconv.Itoa(s)
	}
	shapeText := strings.Join(dims, ", ")
	if len(shape) == 1 {
		shapeText += ","
	}
	hdr := fmt.Sprintf("{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }", shapeText)
	// Pad so that magic(6) + version(2) + length(2) + header is a multiple of 64.
	total := 10 + len(hdr) + 1
	hdr += strings.Repeat(" ", (64-total%64)%64) + "\n"
	buf := make([]byte, 0, 10+len(hdr)+4*len(data))
	buf = append(buf, npy.Magic[:]...)
	buf = append(buf, 1, 0, byte(len(hdr)), byte(len(hdr)>>8))
	buf = append(buf, hdr...)
	for _, v := range data {
		b := math.Float32bits(v)
		buf = append(buf, byte(b), byte(b>>8), byte(b>>16), byte(b>>24))
	}
	_, err := w.Write(buf)
	return err
}

// WriteFile writes a float32 array to path as .npy.
func WriteFile(path string, shape []int, data []float32) error {
	var b bytes.Buffer
	if err := Encode(&b, shape, data); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}
