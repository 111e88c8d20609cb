package model

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzLoad feeds arbitrary bytes to the file decoder: it must refuse them cleanly or
// return a model that is valid, so that encoding it again succeeds and decodes the same.
func FuzzLoad(f *testing.F) {
	good, err := Encode(sampleModel(f))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add(rawModel(1, false))
	f.Add([]byte("\x08\x00\x00\x00CLHM"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Decode(data, "fuzz.clm")
		if err != nil {
			if strings.Contains(err.Error(), "unreadable structure") {
				t.Fatalf("the verifier let a bad offset through: %v", err)
			}
			return
		}
		again, err := Encode(m)
		if err != nil {
			t.Fatalf("a decoded model does not encode: %v", err)
		}
		m2, err := Decode(again, "again.clm")
		if err != nil {
			t.Fatalf("a re-encoded model does not decode: %v", err)
		}
		if d := diffModels(m, m2); d != "" {
			t.Fatalf("re-encoding changed the model: %s", d)
		}
	})
}

// FuzzFromJSON does the same for the JSON form.
func FuzzFromJSON(f *testing.F) {
	good, err := ToJSON(sampleModel(f))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"format": "clhost-model", "version": 1, "outputs": ["x"], "inputs": ["x"], "tensors": [{"name": "x", "type": "int8", "shape": [2], "data": [1, 2]}]}`))
	f.Add([]byte(`{"format": "clhost-model", "version": 1, "tensors": [{"data": [1,,]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := FromJSON(data, "fuzz.json")
		if err != nil {
			return
		}
		js, err := ToJSON(m)
		if err != nil {
			t.Fatalf("a model read from JSON does not write back: %v", err)
		}
		m2, err := FromJSON(js, "again.json")
		if err != nil {
			t.Fatalf("written JSON does not read back: %v\n%s", err, js)
		}
		js2, err := ToJSON(m2)
		if err != nil || !bytes.Equal(js, js2) {
			t.Fatalf("JSON not stable: %v\n%s\n%s", err, js, js2)
		}
	})
}
