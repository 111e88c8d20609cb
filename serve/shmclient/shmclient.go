// Package shmclient is a client of the system shared-memory extension of the Open
// Inference Protocol (Triton's "system_shared_memory", which clhost serve -allow-shm
// offers): it creates POSIX shared-memory regions, registers them with a server on the
// same host, and runs inferences whose inputs and outputs lie in them, so that no
// tensor crosses the connection.
//
//	r, _ := shmclient.Create("image", "/my-app-image", 2*inBytes)
//	defer r.Close()
//	c := shmclient.New("http://127.0.0.1:8000")
//	_ = c.Register(ctx, r)
//	copy(r.Bytes(), input)
//	res, _ := c.Infer(ctx, "resnet18",
//		[]shmclient.Tensor{{Name: "data", Datatype: "FP32", Shape: []int64{1, 3, 224, 224}, Region: "image", ByteSize: inBytes}},
//		[]shmclient.Output{{Name: "prob", Region: "image", Offset: inBytes, ByteSize: outBytes}})
//	// the output lies in r.Bytes()[inBytes:inBytes+outBytes]
package shmclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Region is a POSIX shared-memory object this process created and maps, under the
// name a server is to know it by.
type Region struct {
	// Name is the region's name on the server.
	Name string
	// Key is the object's name as shm_open takes it: a slash, then a file name under
	// /dev/shm.
	Key string
	mem []byte
	obj *object
}

// Bytes is the region's memory: write inputs here, read outputs from here.
func (r *Region) Bytes() []byte { return r.mem }

// Create creates the shared-memory object key (shm_open's name: "/name", the leading
// slash optional) of size bytes, zeroed, and maps it. Close unmaps and removes it. An
// existing object of that key is an error: two clients must not share one by accident.
func Create(name, key string, size int) (*Region, error) {
	if size <= 0 {
		return nil, fmt.Errorf("shared-memory region %q: size %d: must be at least 1", name, size)
	}
	file := strings.TrimPrefix(key, "/")
	if file == "" || strings.ContainsAny(file, "/\x00") || file == "." || file == ".." {
		return nil, fmt.Errorf("shared-memory key %q: a slash, then a name without slashes", key)
	}
	obj, mem, err := createObject(file, size)
	if err != nil {
		return nil, fmt.Errorf("shared-memory region %q: %w", name, err)
	}
	return &Region{Name: name, Key: "/" + file, mem: mem, obj: obj}, nil
}

// Close unmaps the region and removes its object. Unregister it from the server first:
// the server's mapping keeps the memory alive until then, but no client can reach it.
func (r *Region) Close() error {
	if r.obj == nil {
		return nil
	}
	err := r.obj.close()
	r.obj, r.mem = nil, nil
	return err
}

// Client speaks to a server's REST endpoint.
type Client struct {
	// URL is the server's, http://HOST:PORT.
	URL string
	// HTTP is the client requests go through (http.DefaultClient when nil).
	HTTP *http.Client
}

// New is a client of the server at url.
func New(url string) *Client { return &Client{URL: strings.TrimRight(url, "/")} }

// Error is an error answer of the server.
type Error struct {
	Status  int    // the HTTP status
	Message string // the server's "error"
}

func (e *Error) Error() string { return fmt.Sprintf("status %d: %s", e.Status, e.Message) }

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

// do sends a request and decodes a successful answer's JSON into out (when not nil).
func (c *Client) do(ctx context.Context, method, path string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.URL+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			e.Error = string(bytes.TrimSpace(b))
		}
		return &Error{Status: resp.StatusCode, Message: e.Error}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: the answer %.200q: %w", method, path, b, err)
	}
	return nil
}

// Register registers the whole region with the server.
func (c *Client) Register(ctx context.Context, r *Region) error {
	return c.RegisterRange(ctx, r.Name, r.Key, 0, int64(len(r.mem)))
}

// RegisterRange registers size bytes at offset of the shared-memory object key as the
// region name.
func (c *Client) RegisterRange(ctx context.Context, name, key string, offset, size int64) error {
	body, err := json.Marshal(map[string]any{"key": key, "offset": offset, "byte_size": size})
	if err != nil {
		return err
	}
	if err := c.do(ctx, "POST", "/v2/systemsharedmemory/region/"+name+"/register", body, nil); err != nil {
		return fmt.Errorf("registering shared-memory region %q: %w", name, err)
	}
	return nil
}

// Unregister unregisters the region name, or every region when name is "".
func (c *Client) Unregister(ctx context.Context, name string) error {
	path := "/v2/systemsharedmemory/unregister"
	if name != "" {
		path = "/v2/systemsharedmemory/region/" + name + "/unregister"
	}
	if err := c.do(ctx, "POST", path, nil, nil); err != nil {
		return fmt.Errorf("unregistering shared-memory region %q: %w", name, err)
	}
	return nil
}

// RegionStatus is a registered region as the server describes it.
type RegionStatus struct {
	Name     string `json:"name"`
	Key      string `json:"key"`
	Offset   int64  `json:"offset"`
	ByteSize int64  `json:"byte_size"`
}

// Status lists the registered regions, or the region name when not "".
func (c *Client) Status(ctx context.Context, name string) ([]RegionStatus, error) {
	path := "/v2/systemsharedmemory/status"
	if name != "" {
		path = "/v2/systemsharedmemory/region/" + name + "/status"
	}
	var st []RegionStatus
	if err := c.do(ctx, "GET", path, nil, &st); err != nil {
		return nil, fmt.Errorf("shared-memory status: %w", err)
	}
	return st, nil
}

// Tensor is an input whose data lies in a registered region: ByteSize bytes at Offset,
// little-endian, row-major.
type Tensor struct {
	Name     string
	Datatype string
	Shape    []int64
	Region   string
	Offset   int64
	ByteSize int64
}

// Output is an output the server is to write into a registered region: at most
// ByteSize bytes at Offset.
type Output struct {
	Name     string
	Region   string
	Offset   int64
	ByteSize int64
}

// Response is an inference's answer: the outputs' names, datatypes and shapes, their
// data in the regions.
type Response struct {
	ModelName    string `json:"model_name"`
	ModelVersion string `json:"model_version"`
	ID           string `json:"id"`
	Outputs      []struct {
		Name     string  `json:"name"`
		Datatype string  `json:"datatype"`
		Shape    []int64 `json:"shape"`
	} `json:"outputs"`
}

// RequestBody is the JSON of an inference request of inputs and outputs in shared
// memory, for clients that send it themselves.
func RequestBody(inputs []Tensor, outputs []Output) ([]byte, error) {
	params := func(region string, offset, size int64) map[string]any {
		return map[string]any{"shared_memory_region": region, "shared_memory_offset": offset, "shared_memory_byte_size": size}
	}
	ins := make([]map[string]any, len(inputs))
	for i, t := range inputs {
		ins[i] = map[string]any{"name": t.Name, "datatype": t.Datatype, "shape": t.Shape,
			"parameters": params(t.Region, t.Offset, t.ByteSize)}
	}
	outs := make([]map[string]any, len(outputs))
	for i, o := range outputs {
		outs[i] = map[string]any{"name": o.Name, "parameters": params(o.Region, o.Offset, o.ByteSize)}
	}
	return json.Marshal(map[string]any{"inputs": ins, "outputs": outs})
}

// Infer runs one inference of model with inputs read from and outputs written into
// shared memory; when it returns without an error, the outputs are in their regions.
func (c *Client) Infer(ctx context.Context, model string, inputs []Tensor, outputs []Output) (*Response, error) {
	body, err := RequestBody(inputs, outputs)
	if err != nil {
		return nil, err
	}
	var res Response
	if err := c.do(ctx, "POST", "/v2/models/"+model+"/infer", body, &res); err != nil {
		return nil, fmt.Errorf("model %q: %w", model, err)
	}
	return &res, nil
}
