package serve

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// embedIR is an IR whose Parameter takes i64 token ids (dynamic batch) and gathers rows
// of a 10×4 table from its .bin (row r holds 4r .. 4r+3).
const embedIR = `<?xml version="1.0"?>
<net name="embed" version="11">
	<layers>
		<layer id="0" name="ids" type="Parameter" version="opset1">
			<data shape="?,3" element_type="i64" />
			<output><port id="0" precision="I64" names="ids"><dim>-1</dim><dim>3</dim></port></output>
		</layer>
		<layer id="1" name="table" type="Const" version="opset1">
			<data element_type="f32" shape="10,4" offset="0" size="160" />
			<output><port id="0" precision="FP32"><dim>10</dim><dim>4</dim></port></output>
		</layer>
		<layer id="2" name="axis" type="Const" version="opset1">
			<data element_type="i64" shape="" offset="160" size="8" />
			<output><port id="0" precision="I64" /></output>
		</layer>
		<layer id="3" name="rows" type="Gather" version="opset8">
			<data batch_dims="0" />
			<input>
				<port id="0" precision="FP32"><dim>10</dim><dim>4</dim></port>
				<port id="1" precision="I64"><dim>-1</dim><dim>3</dim></port>
				<port id="2" precision="I64" />
			</input>
			<output><port id="3" precision="FP32" names="rows"><dim>-1</dim><dim>3</dim><dim>4</dim></port></output>
		</layer>
		<layer id="4" name="rows/sink" type="Result" version="opset1">
			<input><port id="0" precision="FP32"><dim>-1</dim><dim>3</dim><dim>4</dim></port></input>
		</layer>
	</layers>
	<edges>
		<edge from-layer="1" from-port="0" to-layer="3" to-port="0" />
		<edge from-layer="0" from-port="0" to-layer="3" to-port="1" />
		<edge from-layer="2" from-port="0" to-layer="3" to-port="2" />
		<edge from-layer="3" from-port="3" to-layer="4" to-port="0" />
	</edges>
</net>
`

// TestIRIntegerInput: an IR whose Parameter is i64 ids is served with that datatype, as
// an ONNX model's is: metadata says INT64, INT64 data gives the table's rows, FP32 is
// refused.
func TestIRIntegerInput(t *testing.T) {
	dir := t.TempDir()
	var bin []byte
	for i := range 40 {
		bin = binary.LittleEndian.AppendUint32(bin, math.Float32bits(float32(i)))
	}
	bin = binary.LittleEndian.AppendUint64(bin, 0)
	xml := filepath.Join(dir, "embed.xml")
	if err := os.WriteFile(xml, []byte(embedIR), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "embed.bin"), bin, 0o644); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, []Source{FileSource(xml, nil)}, 1, Options{MaxBatch: 4})
	url := ts.httpURL + "/v2/models/embed"
	resp, err := httpClient.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Inputs []struct{ Name, Datatype string }
	}
	err = json.NewDecoder(resp.Body).Decode(&meta)
	resp.Body.Close()
	if err != nil || len(meta.Inputs) != 1 || meta.Inputs[0].Name != "ids" || meta.Inputs[0].Datatype != "INT64" {
		t.Fatalf("metadata inputs %+v (%v), want ids INT64", meta.Inputs, err)
	}
	body := `{"inputs":[{"name":"ids","datatype":"INT64","shape":[2,3],"data":[0,9,3,-1,4,7]}]}`
	code, res := post(t, url+"/infer", []byte(body), nil)
	if code != http.StatusOK || len(res.Outputs) != 1 {
		t.Fatalf("JSON INT64: %d %+v", code, res)
	}
	for i, id := range []int{0, 9, 3, -1, 4, 7} {
		r := (id + 10) % 10
		for k := range 4 {
			if got := res.Outputs[0].Data[4*i+k]; got != float64(4*r+k) {
				t.Fatalf("id %d element %d: %v, want %d", id, k, got, 4*r+k)
			}
		}
	}
	bad := `{"inputs":[{"name":"ids","datatype":"FP32","shape":[2,3],"data":[0,1,2,3,4,5]}]}`
	if code, res := post(t, url+"/infer", []byte(bad), nil); code != http.StatusBadRequest {
		t.Errorf("FP32 data for the INT64 input: %d %q, want 400", code, res.Error)
	}
}
