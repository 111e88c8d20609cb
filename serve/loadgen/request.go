package loadgen

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand"
	"net/http"
	"slices"
	"strconv"
)

// tensorMeta is a tensor of a model's metadata.
type tensorMeta struct {
	Name, Datatype string
	Shape          []int64
}

// modelMeta is what the generator reads of a model's metadata.
type modelMeta struct {
	Inputs, Outputs []tensorMeta
}

// readMeta reads the model's metadata.
func readMeta(client *http.Client, base, name string) (*modelMeta, error) {
	resp, err := client.Get(base + "/v2/models/" + name)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("model %q metadata: status %d: %s", name, resp.StatusCode, bytes.TrimSpace(b))
	}
	var meta modelMeta
	if err := json.Unmarshal(b, &meta); err != nil {
		return nil, fmt.Errorf("model %q metadata: %w", name, err)
	}
	return &meta, nil
}

// batchShape is a tensor's shape with batch for its variable first dimension, and its
// number of elements.
func batchShape(t tensorMeta, batch int) ([]int64, int64, error) {
	shape := slices.Clone(t.Shape)
	n := int64(1)
	for i, d := range shape {
		if d < 0 {
			if i != 0 {
				return nil, 0, fmt.Errorf("tensor %q: shape %v has a variable dimension other than the batch", t.Name, t.Shape)
			}
			shape[i] = int64(batch)
		}
		n *= shape[i]
	}
	return shape, n, nil
}

// randomInputs are random data for each input of meta, with batch items.
func randomInputs(meta *modelMeta, batch int, seed int64) (shapes [][]int64, blobs [][]byte, err error) {
	rng := rand.New(rand.NewSource(seed))
	for _, in := range meta.Inputs {
		shape, n, err := batchShape(in, batch)
		if err != nil {
			return nil, nil, err
		}
		blob, err := randomBlob(in.Datatype, int(n), rng)
		if err != nil {
			return nil, nil, fmt.Errorf("input %q: %w", in.Name, err)
		}
		shapes, blobs = append(shapes, shape), append(blobs, blob)
	}
	return shapes, blobs, nil
}

// buildRequest builds one request of meta's inputs as binary tensor data; it returns
// the body and the JSON header's length.
func buildRequest(meta *modelMeta, shapes [][]int64, data [][]byte) ([]byte, string, error) {
	var inputs []map[string]any
	var blobs []byte
	for i, in := range meta.Inputs {
		inputs = append(inputs, map[string]any{"name": in.Name, "datatype": in.Datatype, "shape": shapes[i],
			"parameters": map[string]any{"binary_data_size": len(data[i])}})
		blobs = append(blobs, data[i]...)
	}
	header, err := json.Marshal(map[string]any{"inputs": inputs, "parameters": map[string]any{"binary_data_output": true}})
	if err != nil {
		return nil, "", err
	}
	return append(header, blobs...), strconv.Itoa(len(header)), nil
}

// randomBlob is n random values of the protocol datatype, little-endian: normal ones
// for FP32, small non-negative ones for integers (indices and ids stay in range).
func randomBlob(datatype string, n int, rng *rand.Rand) ([]byte, error) {
	switch datatype {
	case "FP32":
		b := make([]byte, 0, 4*n)
		for range n {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(rng.NormFloat64())))
		}
		return b, nil
	case "INT8", "UINT8":
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Intn(8))
		}
		return b, nil
	case "INT32":
		b := make([]byte, 0, 4*n)
		for range n {
			b = binary.LittleEndian.AppendUint32(b, uint32(rng.Intn(8)))
		}
		return b, nil
	case "INT64":
		b := make([]byte, 0, 8*n)
		for range n {
			b = binary.LittleEndian.AppendUint64(b, uint64(rng.Intn(8)))
		}
		return b, nil
	}
	return nil, fmt.Errorf("datatype %s: bench sends FP32 and integer tensors only", datatype)
}
