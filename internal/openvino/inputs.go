package openvino

import "github.com/clhost/clhost/model"

// IntegerInputs are the inputs an IR's Parameters declare as 8-, 32- or 64-bit
// integers (token ids, indices), by the names the loaded model gives them: every
// activation loads as float32, so a server learns here which element types its clients
// send. Nil when there are none or the text is not a readable IR (loading it says why).
func IntegerInputs(xmlText []byte) map[string]model.DataType {
	net, err := parse(xmlText)
	if err != nil {
		return nil
	}
	// Named in the order the loader names them, so that clashing names get the same
	// suffixes.
	r := &reader{net: net, byID: map[int]*xmlLayer{}, from: map[portKey]portKey{}, users: map[portKey]int{},
		vals: map[portKey]*val{}, names: map[string]bool{}, portOf: map[string]portKey{}}
	order, err := r.link()
	if err != nil {
		return nil
	}
	r.nameTensors(order)
	var out map[string]model.DataType
	for _, l := range order {
		if l.Type != "Parameter" || len(l.Outputs) == 0 {
			continue
		}
		t, ok := map[string]model.DataType{"i64": model.Int64, "i32": model.Int32, "i8": model.Int8, "u8": model.Uint8}[l.data["element_type"]]
		if !ok {
			continue
		}
		if out == nil {
			out = map[string]model.DataType{}
		}
		out[r.vals[portKey{l.id, l.Outputs[0].id}].name] = t
	}
	return out
}
