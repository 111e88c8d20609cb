package serve

import (
	"encoding/json"
	"math/rand"
	"reflect"
	"testing"
)

// TestFastRequest: the requests the fast reader takes (every binary request clients
// send) it reads as encoding/json does; whatever it leaves to encoding/json, mutations
// of them included, it never reads differently.
func TestFastRequest(t *testing.T) {
	taken := []string{
		`{"inputs":[{"name":"x","shape":[1,3,224,224],"datatype":"FP32","parameters":{"binary_data_size":602112}}],"parameters":{"binary_data_output":true}}`,
		` { "id" : "42", "inputs" : [ { "name" : "a", "datatype" : "INT32", "shape" : [ 2 , 3 ] , "parameters" : { "binary_data_size" : 24 } },
		  {"name":"b","datatype":"FP32","shape":[],"parameters":{}} ],
		  "outputs" : [ { "name" : "y", "parameters" : { "binary_data" : false, "note": "k", "n": -1.5e3 } }, {"name":"z"} ],
		  "parameters" : { "p" : 0, "q": "v" } } `,
		`{"inputs":[]}`,
		`{}`,
		`{"id":"","outputs":[]}`,
		`{"inputs":[{"name":"x","shape":[-1,0,9223372036854775807],"datatype":"UINT8"}]}`,
	}
	left := []string{
		`{"inputs":[{"name":"x","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]}]}`, // data
		`{"Inputs":[]}`,                // a key in another case
		`{"id":"a\"b"}`,                // an escape
		`{"id":"\u00e9"}`,              // and another
		`{"id":"é"}`,                   // not ASCII
		`{"inputs":[],"inputs":[]}`,    // a key twice
		`{"parameters":{"a":1,"a":2}}`, // and in parameters
		`{"parameters":{"a":null}}`,    // null
		`{"parameters":{"a":[1]}}`,     // not a scalar
		`{"inputs":[{"shape":[1.0]}]}`, // not an integer
		`{"inputs":[{"shape":[1e2]}]}`,
		`{"inputs":[{"shape":[9223372036854775808]}]}`, // out of range
		`{"inputs":[{"shape":[01]}]}`,                  // not JSON
		`{"inputs":null}`,
		`{"extra":1}`,
		`{"id":"a"} x`,
		`[]`,
		``,
	}
	check := func(doc string) bool {
		var fast restRequest
		took := (&jsonScanner{b: []byte(doc)}).request(&fast)
		if !took {
			return false
		}
		var want restRequest
		if err := json.Unmarshal([]byte(doc), &want); err != nil {
			t.Errorf("%s: read by the fast reader, encoding/json fails: %v", doc, err)
			return true
		}
		if !reflect.DeepEqual(fast, want) {
			t.Errorf("%s: read as\n%#v\nencoding/json reads\n%#v", doc, fast, want)
		}
		return true
	}
	for _, doc := range taken {
		if !check(doc) {
			t.Errorf("%s: left to encoding/json", doc)
		}
	}
	for _, doc := range left {
		if check(doc) {
			t.Errorf("%s: taken by the fast reader", doc)
		}
	}
	// Mutations: bytes dropped, repeated or replaced with JSON's punctuation.
	rng := rand.New(rand.NewSource(11))
	const alphabet = `{}[]:," \-0123456789.eE+tfnaluxy`
	for range 20000 {
		doc := []byte(taken[rng.Intn(len(taken))])
		for range 1 + rng.Intn(3) {
			if len(doc) == 0 {
				break
			}
			k := rng.Intn(len(doc))
			switch rng.Intn(3) {
			case 0:
				doc = append(doc[:k:k], doc[k+1:]...)
			case 1:
				doc = append(doc[:k+1:k+1], doc[k:]...)
			default:
				doc[k] = alphabet[rng.Intn(len(alphabet))]
			}
		}
		check(string(doc))
	}
	// The server reads requests through it, with encoding/json's errors.
	var req restRequest
	if err := parseRequest([]byte(`{"inputs":[{"name":"x","shape":[1.5]}]}`), &req); err == nil {
		t.Error("a shape of 1.5 was read")
	}
	if err := parseRequest([]byte(taken[0]), &req); err != nil || req.Inputs[0].Shape[3] != 224 {
		t.Errorf("a binary request: %v, %+v", err, req)
	}
}

// TestAppendJSONString: strings are written as encoding/json writes them.
func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "relu", "a b-c_1.2", `q"uote`, `back\slash`, "<tag>&", "tab\t", "é", "\xff", "\x7f"} {
		want, _ := json.Marshal(s)
		if got := appendJSONString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Errorf("%q: %s, encoding/json writes %s", s, got[1:], want)
		}
	}
}
