package onnx

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/clhost/clhost/model"
	"google.golang.org/protobuf/encoding/protowire"
)

func i64bytes(vs ...int64) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	return b
}

func TestDecodeTensor(t *testing.T) {
	raw := tensorPB("s", dtInt64, []int64{2}, pb{}.bytes(9, i64bytes(3, -1)))
	got, err := DecodeTensor(raw)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "s" || got.Type != model.Int64 || len(got.Shape) != 1 || got.Shape[0] != 2 {
		t.Fatalf("got %s %s %v", got.Name, got.Type, got.Shape)
	}
	if v, _ := got.Int64s(); len(v) != 2 || v[0] != 3 || v[1] != -1 {
		t.Errorf("values %v, want [3 -1]", v)
	}
	// float_data, packed, in a rank-0 tensor.
	packed := protowire.AppendFixed32(nil, 0x3fc00000) // 1.5
	scalar := tensorPB("f", dtFloat, nil, pb{}.bytes(4, packed))
	if got, err = DecodeTensor(scalar); err != nil || len(got.Shape) != 0 || len(got.Data) != 4 {
		t.Fatalf("scalar: %v %v", got, err)
	}
	if v, _ := got.Float32s(); v[0] != 1.5 {
		t.Errorf("scalar value %v, want 1.5", v)
	}
	if _, err := DecodeTensor([]byte{0xff}); err == nil || !strings.Contains(err.Error(), "TensorProto") {
		t.Errorf("garbage: %v", err)
	}
}

// reshapeByInput is x[2,3] → Reshape(x, s) → y with the target shape s a graph input, as
// ONNX's node tests write it.
func reshapeByInput() []byte {
	return onnxModel(14, pb{}.msg(1, node("Reshape", "r", []string{"x", "s"}, []string{"y"})).
		str(2, "g").
		msg(11, vinfo("x", dtFloat, 2, 3)).
		msg(11, vinfo("s", dtInt64, 2)).
		msg(12, vinfo("y", dtFloat, 3, 2)))
}

func TestInspect(t *testing.T) {
	s, err := Inspect(reshapeByInput())
	if err != nil {
		t.Fatal(err)
	}
	if s.Opset != 14 || strings.Join(s.Inputs, ",") != "x,s" || strings.Join(s.Outputs, ",") != "y" ||
		strings.Join(s.OpTypes, ",") != "Reshape" || strings.Join(s.LoadTimeInputs, ",") != "s" {
		t.Errorf("summary %+v", s)
	}
}

// TestLoadTimeConstants: a graph input given in Options.Constants becomes a constant, so
// a Reshape whose target shape is a graph input loads; without it the load is refused.
func TestLoadTimeConstants(t *testing.T) {
	data := reshapeByInput()
	if _, err := Decode(data, "", "m"); err == nil || !strings.Contains(err.Error(), "must be a constant") {
		t.Errorf("without the constant: %v", err)
	}
	s := model.Tensor{Type: model.Int64, Shape: []int{2}, Data: i64bytes(3, 2)}
	m, err := Options{Constants: map[string]model.Tensor{"s": s}}.Decode(data, "", "m")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(m.Inputs, ",") != "x" {
		t.Errorf("inputs %v, want [x]", m.Inputs)
	}
	wantShapes(t, m, map[string][]int{"y": {3, 2}})
	bad := map[string]model.Tensor{
		"the model fixes dimension": {Type: model.Int64, Shape: []int{3}, Data: i64bytes(3, 2, 1)},
		"bytes for":                 {Type: model.Int64, Shape: []int{2}, Data: i64bytes(3)},
	}
	for want, c := range bad {
		if _, err := (Options{Constants: map[string]model.Tensor{"s": c}}).Decode(data, "", "m"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("constant %v: %v, want an error containing %q", c.Shape, err, want)
		}
	}
	if _, err := (Options{Constants: map[string]model.Tensor{"z": s}}).Decode(data, "", "m"); err == nil || !strings.Contains(err.Error(), "not a graph input") {
		t.Errorf("unknown name: %v", err)
	}
}
