package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"testing"
	"unsafe"
)

// TestBodyInPlace: a binary request's FP32 input is used where the body was read, its
// data aligned for the device whatever the JSON header's length, with no copy; data
// that is not the machine's float32 where it lies (integers, a chunked body's
// unaligned data) is decoded into a copy with the same values.
func TestBodyInPlace(t *testing.T) {
	s := &Server{opts: Options{MaxBodyBytes: 64 << 20}}
	m := &servedModel{name: "m", batched: true, inputs: []tensorMeta{
		{name: "a", datatype: "FP32", shape: []int{1, 5}, row: 5},
		{name: "b", datatype: "INT32", shape: []int{1, 3}, row: 3},
	}}
	a := []float32{1.5, -2, 3.25, 0, 7}
	b := []float32{4, -5, 6}
	for _, pad := range []int{0, 1, 2, 3, 17, 63} {
		header := `{"inputs":[{"name":"a","datatype":"FP32","shape":[1,5],"parameters":{"binary_data_size":20}},` +
			`{"name":"b","datatype":"INT32","shape":[1,3],"parameters":{"binary_data_size":12}}]}` + string(bytes.Repeat([]byte(" "), pad))
		blob := append(float32Bytes(a), 4, 0, 0, 0, 0xfb, 0xff, 0xff, 0xff, 6, 0, 0, 0)
		for _, chunked := range []bool{false, true} {
			req := httptest.NewRequest("POST", "/v2/models/m/infer", bytes.NewReader(append([]byte(header), blob...)))
			req.Header.Set(headerJSONLength, strconv.Itoa(len(header)))
			if chunked {
				req.ContentLength = -1
			}
			body, buf, err := s.readBody(httptest.NewRecorder(), req, &hold{})
			if err != nil {
				t.Fatal(err)
			}
			if !chunked && uintptr(unsafe.Pointer(&body[len(header)]))%bodyAlign != 0 {
				t.Errorf("header of %d bytes: the binary data starts at %#x, not %d-byte aligned", len(header), uintptr(unsafe.Pointer(&body[len(header)])), bodyAlign)
			}
			h, bin, err := splitBody(req, body)
			if err != nil {
				t.Fatal(err)
			}
			var rr restRequest
			if err := json.Unmarshal(h, &rr); err != nil {
				t.Fatal(err)
			}
			ins, err := restInputs(rr.Inputs, bin)
			if err != nil {
				t.Fatal(err)
			}
			r, err := s.decode(context.Background(), m, ins, &hold{})
			if err != nil {
				t.Fatal(err)
			}
			compareFloats(t, "input a", r.inputs[0], a)
			compareFloats(t, "input b", r.inputs[1], b)
			inPlace := unsafe.SliceData(r.inputs[0]) == (*float32)(unsafe.Pointer(&bin[0]))
			if aligned := uintptr(unsafe.Pointer(&bin[0]))%4 == 0; inPlace != (aligned && littleEndian) {
				t.Errorf("header of %d bytes, chunked %v: FP32 input in place %v, its data 4-byte aligned %v", len(header), chunked, inPlace, aligned)
			}
			if unsafe.SliceData(r.inputs[1]) == (*float32)(unsafe.Pointer(&bin[20])) {
				t.Errorf("the INT32 input was taken in place")
			}
			buf.release()
		}
	}
	// A body announced larger than maxPooledBody is read as it comes, not into a
	// buffer of the announced length.
	big := bytes.Repeat([]byte{7}, maxPooledBody+1)
	req := httptest.NewRequest("POST", "/v2/models/m/infer", bytes.NewReader(big))
	if body, buf, err := s.readBody(httptest.NewRecorder(), req, &hold{}); err != nil || buf != nil || !bytes.Equal(body, big) {
		t.Errorf("a body of %d bytes: error %v, pooled %v, read intact %v", len(big), err, buf != nil, bytes.Equal(body, big))
	}
	// A body shorter than its Content-Length is a bad request.
	req = httptest.NewRequest("POST", "/v2/models/m/infer", bytes.NewReader([]byte("{}")))
	req.ContentLength = 10
	if _, _, err := s.readBody(httptest.NewRecorder(), req, &hold{}); kindOf(err) != KindInvalid {
		t.Errorf("short body: %v, want an invalid request", err)
	}
}
