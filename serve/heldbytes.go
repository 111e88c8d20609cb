package serve

import "bytes"

// answerBytes is the most memory a REST answer's encoding takes beyond the outputs'
// values, which the request already holds: JSON text of up to 16 bytes a float32
// value and 21 an integer, and the bytes of binary outputs of a datatype other than
// FP32 (FP32 is sent where it lies). It is taken from the request's hold before the
// answer is written, so that answers of a few megabytes of values each, tens of
// megabytes as text, count against the budget as their values do.
func answerBytes(m *servedModel, outs []outputChoice, rep *reply) int64 {
	var n int64
	for _, o := range outs {
		t := &m.outputs[o.index]
		elems := int64(len(rep.outputs[o.index]))
		switch {
		case o.shm:
		case o.binary && t.datatype != "FP32":
			n += elems * int64(typeSize(t.datatype))
		case !o.binary && t.datatype == "FP32":
			n += 16 * elems
		case !o.binary:
			n += 21 * elems
		}
	}
	return n
}

// jsonDataBytes is the bytes of the inputs' JSON data, which encoding/json copies out
// of the body (json.RawMessage): a request of JSON tensors holds its data twice until
// it is decoded.
func jsonDataBytes(inputs []restInput) int64 {
	var n int64
	for i := range inputs {
		n += int64(len(inputs[i].Data))
	}
	return n
}

// structCost is what an object or a key of a request's JSON decodes to beyond its
// text, generously: a restInput or restOutput, a map entry, with the slices' growth.
const structCost = 192

// jsonStructBytes is the memory a request's JSON decodes to beyond its bytes: a
// struct or map entry for each object and key. Three bytes of "{}," make a restInput
// of 88; a million of them took 180 MB before any check could refuse them.
func jsonStructBytes(header []byte) int64 {
	return structCost * int64(bytes.Count(header, []byte("{"))+bytes.Count(header, []byte(":")))
}
