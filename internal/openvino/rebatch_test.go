package openvino

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"

	"github.com/clhost/clhost/internal/graph"
)

// flattenIR is an IR of a fixed batch 1 whose Reshape copies the batch (special_zero's
// 0) and infers the rest (-1), then an Unsqueeze and a Squeeze of axis 1.
const flattenIR = `<?xml version="1.0"?>
<net name="flatten" version="11">
	<layers>
		<layer id="0" name="x" type="Parameter" version="opset1">
			<data shape="1,3,2,2" element_type="f32" />
			<output><port id="0" precision="FP32" names="x"><dim>1</dim><dim>3</dim><dim>2</dim><dim>2</dim></port></output>
		</layer>
		<layer id="1" name="target" type="Const" version="opset1">
			<data element_type="i64" shape="2" offset="0" size="16" />
			<output><port id="0" precision="I64"><dim>2</dim></port></output>
		</layer>
		<layer id="2" name="flatten" type="Reshape" version="opset1">
			<data special_zero="true" />
			<input><port id="0" precision="FP32"><dim>1</dim><dim>3</dim><dim>2</dim><dim>2</dim></port><port id="1" precision="I64"><dim>2</dim></port></input>
			<output><port id="2" precision="FP32"><dim>1</dim><dim>12</dim></port></output>
		</layer>
		<layer id="3" name="axis" type="Const" version="opset1">
			<data element_type="i64" shape="1" offset="16" size="8" />
			<output><port id="0" precision="I64"><dim>1</dim></port></output>
		</layer>
		<layer id="4" name="unsq" type="Unsqueeze" version="opset1">
			<input><port id="0" precision="FP32"><dim>1</dim><dim>12</dim></port><port id="1" precision="I64"><dim>1</dim></port></input>
			<output><port id="2" precision="FP32"><dim>1</dim><dim>1</dim><dim>12</dim></port></output>
		</layer>
		<layer id="5" name="sq" type="Squeeze" version="opset1">
			<input><port id="0" precision="FP32"><dim>1</dim><dim>1</dim><dim>12</dim></port><port id="1" precision="I64"><dim>1</dim></port></input>
			<output><port id="2" precision="FP32" names="y"><dim>1</dim><dim>12</dim></port></output>
		</layer>
		<layer id="6" name="y/sink" type="Result" version="opset1">
			<input><port id="0" precision="FP32"><dim>1</dim><dim>12</dim></port></input>
		</layer>
	</layers>
	<edges>
		<edge from-layer="0" from-port="0" to-layer="2" to-port="0" />
		<edge from-layer="1" from-port="0" to-layer="2" to-port="1" />
		<edge from-layer="2" from-port="2" to-layer="4" to-port="0" />
		<edge from-layer="3" from-port="0" to-layer="4" to-port="1" />
		<edge from-layer="4" from-port="2" to-layer="5" to-port="0" />
		<edge from-layer="3" from-port="0" to-layer="5" to-port="1" />
		<edge from-layer="5" from-port="2" to-layer="6" to-port="0" />
	</edges>
</net>
`

// TestIRReshapeKeepsBatchFree: a Reshape, Unsqueeze or Squeeze that takes dim 0 from its
// input keeps it symbolic (0, -1), so that a model of a fixed batch can be rebatched, as
// serve and run do; the shapes at the IR's own batch are unchanged.
func TestIRReshapeKeepsBatchFree(t *testing.T) {
	var bin []byte
	for _, v := range []int64{0, -1, 1} {
		bin = binary.LittleEndian.AppendUint64(bin, uint64(v))
	}
	m, err := Options{}.Decode([]byte(flattenIR), bin, "flatten.xml")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]int64{"flatten": {0, -1}, "unsq": {0, 1, 12}, "sq": {0, 12}}
	for _, l := range m.Layers {
		if w, ok := want[l.Name]; ok {
			if a := l.Attr("shape"); a == nil || !slices.Equal(a.Ints, w) {
				t.Errorf("layer %s: shape %v, want %v", l.Name, a, w)
			}
		}
	}
	if s := m.Tensor("y").Shape; fmt.Sprint(s) != "[1 12]" {
		t.Errorf("y %v", s)
	}
	r, err := graph.Rebatch(m, 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := r.Tensor("y").Shape; fmt.Sprint(s) != "[4 12]" {
		t.Errorf("rebatched y %v, want [4 12]", s)
	}
}
