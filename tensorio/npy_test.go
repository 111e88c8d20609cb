package tensorio

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The fixtures were written by numpy (np.save): arange(24).reshape(2,3,4)*0.5 in C and
// Fortran order and as float64, arange(6).reshape(2,3) as int64, arange(4) as uint8.
func TestReadNumpyFixtures(t *testing.T) {
	want := make([]float32, 24)
	for i := range want {
		want[i] = float32(i) * 0.5
	}
	for _, name := range []string{"c_f32.npy", "fortran_f32.npy", "f64.npy"} {
		a, err := ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(a.Shape, []int{2, 3, 4}) || !reflect.DeepEqual(a.Data, want) {
			t.Errorf("%s: shape %v data %v", name, a.Shape, a.Data)
		}
	}
	a, err := ReadFile("testdata/i64.npy")
	if err != nil || !reflect.DeepEqual(a.Data, []float32{0, 1, 2, 3, 4, 5}) || a.DType != "<i8" {
		t.Errorf("i64: %+v %v", a, err)
	}
	a, err = ReadFile("testdata/u8.npy")
	if err != nil || !reflect.DeepEqual(a.Data, []float32{0, 1, 2, 3}) {
		t.Errorf("u8: %+v %v", a, err)
	}
	a, err = ReadFile("testdata/scalar.npy")
	if err != nil || len(a.Shape) != 0 || !reflect.DeepEqual(a.Data, []float32{2.5}) {
		t.Errorf("scalar: %+v %v", a, err)
	}
}

func TestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.npy")
	data := []float32{1, -2, 3.25, 4, 5, 6}
	if err := WriteFile(path, []int{1, 2, 3}, data); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	if (len(raw)-len(data)*4)%64 != 0 {
		t.Errorf("header not 64-byte aligned: %d bytes total", len(raw))
	}
	a, err := ReadFile(path)
	if err != nil || !reflect.DeepEqual(a.Shape, []int{1, 2, 3}) || !reflect.DeepEqual(a.Data, data) {
		t.Fatalf("round trip: %+v %v", a, err)
	}
	if err := WriteFile(path, []int{4}, data); err == nil {
		t.Error("shape/data mismatch accepted")
	}
}

func TestBadFiles(t *testing.T) {
	good, _ := os.ReadFile("testdata/c_f32.npy")
	cases := map[string][]byte{
		"empty":         nil,
		"not npy":       []byte("hello world, this is text"),
		"truncated hdr": good[:20],
		"truncated dat": good[:len(good)-5],
		"huge hdr len":  append(append([]byte{}, good[:8]...), 0xff, 0xff),
		"bad version":   append(append(append([]byte{}, good[:6]...), 9, 0), good[8:]...),
	}
	for name, data := range cases {
		if _, err := Decode(data); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := Decode(mustRead(t, "testdata/complex.npy")); err == nil || !strings.Contains(err.Error(), "unsupported element type") {
		t.Errorf("complex: %v", err)
	}
	_, err := ReadFile("testdata/missing.npy")
	if err == nil || !strings.Contains(err.Error(), "missing.npy") {
		t.Errorf("missing file: %v", err)
	}
}

func mustRead(t *testing.T, p string) []byte {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func FuzzDecode(f *testing.F) {
	for _, n := range []string{"c_f32.npy", "fortran_f32.npy", "i64.npy", "scalar.npy"} {
		b, _ := os.ReadFile(filepath.Join("testdata", n))
		f.Add(b)
	}
	var buf bytes.Buffer
	_ = Encode(&buf, []int{2, 2}, []float32{1, 2, 3, 4})
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := Decode(data)
		if err != nil {
			return
		}
		n := 1
		for _, s := range a.Shape {
			n *= s
		}
		if n != len(a.Data) {
			t.Fatalf("shape %v but %d elements", a.Shape, len(a.Data))
		}
	})
}
