package serve

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"

	pb "github.com/clhost/clhost/serve/inferencepb"
)

// TestIntegerData: integer tensors (as a model input declared INT8, UINT8, INT32 or
// INT64 takes them) decode exactly from binary, JSON and typed gRPC contents; values
// float32 cannot hold exactly, or out of the type's range, are refused.
func TestIntegerData(t *testing.T) {
	i64 := make([]byte, 8*3)
	for i, v := range []int64{-5, 1 << 24, 7} {
		binary.LittleEndian.PutUint64(i64[8*i:], uint64(v))
	}
	dst := make([]float32, 3)
	if bad := decodeRaw("INT64", i64, dst); bad >= 0 || fmt.Sprint(dst) != "[-5 1.6777216e+07 7]" {
		t.Errorf("INT64 raw: %v (bad %d)", dst, bad)
	}
	binary.LittleEndian.PutUint64(i64[8:], 1<<24+1)
	if bad := decodeRaw("INT64", i64, dst); bad != 1 {
		t.Errorf("INT64 2^24+1 decoded to %v, want refused at 1", dst)
	}
	if bad := decodeRaw("INT8", []byte{0xff, 3, 0x80}, dst); bad >= 0 || fmt.Sprint(dst) != "[-1 3 -128]" {
		t.Errorf("INT8 raw: %v", dst)
	}
	if err := decodeJSONData("k", "INT32", []byte("[[1, -2], [3]]"), dst); err != nil || fmt.Sprint(dst) != "[1 -2 3]" {
		t.Errorf("INT32 JSON: %v %v", dst, err)
	}
	for data, says := range map[string]string{
		"[1, 2.5, 3]":  "not an integer",
		"[1, 2, 300]":  "out of the range of UINT8",
		"[1, true, 3]": "boolean",
	} {
		if err := decodeJSONData("k", "UINT8", []byte(data), dst); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("UINT8 JSON %s: %v, want %q", data, err, says)
		}
	}
	if err := typedFill("k", "INT64", &pb.InferTensorContents{Int64Contents: []int64{4, -4, 9}})(dst); err != nil || fmt.Sprint(dst) != "[4 -4 9]" {
		t.Errorf("INT64 typed: %v %v", dst, err)
	}
	if err := typedFill("k", "INT8", &pb.InferTensorContents{IntContents: []int32{1, 200, 3}})(dst); err == nil {
		t.Error("INT8 typed 200 accepted")
	}
	if b := encodeRaw(nil, "INT64", []float32{2.6, -1.2}); int64(binary.LittleEndian.Uint64(b)) != 3 || int64(binary.LittleEndian.Uint64(b[8:])) != -1 {
		t.Errorf("INT64 output encoding %v", b)
	}
	if s := string(appendJSONValues(nil, "FP32", []float32{1.5, float32(math.NaN()), float32(math.Inf(1))})); s != "1.5,null,null" {
		t.Errorf("FP32 JSON with NaN and Inf: %s", s)
	}
}
