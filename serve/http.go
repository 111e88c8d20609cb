package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Header and parameter names of the binary tensor data extension.
const (
	headerJSONLength = "Inference-Header-Content-Length"
	paramBinarySize  = "binary_data_size"
	paramBinary      = "binary_data"
	paramBinaryAll   = "binary_data_output"
)

// extensions are the protocol extensions server metadata lists.
var extensions = []string{"binary_tensor_data"}

// Handler serves the REST half of the protocol and GET /metrics; every error it
// answers, the router's own included, is the protocol's JSON error.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v2/health/live", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]bool{"live": true})
	})
	mux.HandleFunc("GET /v2/health/ready", func(w http.ResponseWriter, r *http.Request) {
		ready := s.Ready()
		writeJSON(w, readyStatus(ready), map[string]bool{"ready": ready})
	})
	mux.HandleFunc("GET /v2", s.serverMetadata)
	mux.HandleFunc("GET /v2/{$}", s.serverMetadata)
	mux.HandleFunc("GET /v2/models/{name}", s.modelMetadata)
	mux.HandleFunc("GET /v2/models/{name}/versions/{version}", s.modelMetadata)
	mux.HandleFunc("GET /v2/models/{name}/ready", s.modelReady)
	mux.HandleFunc("GET /v2/models/{name}/versions/{version}/ready", s.modelReady)
	mux.HandleFunc("POST /v2/models/{name}/infer", s.inferHTTP)
	mux.HandleFunc("POST /v2/models/{name}/versions/{version}/infer", s.inferHTTP)
	s.shmRoutes(mux)
	mux.Handle("GET /metrics", s.metrics.handler())
	return jsonRouter{mux: mux, readTimeout: s.opts.ReadTimeout}
}

func readyStatus(ready bool) int {
	if ready {
		return http.StatusOK
	}
	return http.StatusServiceUnavailable
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"response encoding failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func writeError(w http.ResponseWriter, err error) {
	if kindOf(err) == KindOverloaded {
		w.Header().Set("Retry-After", "1") // requests in flight are answered in milliseconds to seconds
	}
	writeJSON(w, kindOf(err).HTTPStatus(), map[string]string{"error": err.Error()})
}

func (s *Server) serverMetadata(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"name": "clhost", "version": s.opts.Version, "extensions": s.extensions()})
}

// restTensorMeta is a tensor of model metadata.
type restTensorMeta struct {
	Name     string  `json:"name"`
	Datatype string  `json:"datatype"`
	Shape    []int64 `json:"shape"`
}

func (s *Server) modelMetadata(w http.ResponseWriter, r *http.Request) {
	m, err := s.lookup(r.PathValue("name"), r.PathValue("version"))
	if err == nil {
		err = m.notServed()
	}
	if err != nil {
		writeError(w, err)
		return
	}
	metas := func(ts []tensorMeta) []restTensorMeta {
		out := make([]restTensorMeta, len(ts))
		for i := range ts {
			out[i] = restTensorMeta{Name: ts[i].name, Datatype: ts[i].datatype, Shape: ts[i].metaShape(m.batched)}
		}
		return out
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"name": m.name, "versions": []string{modelVersion}, "platform": m.platform,
		"inputs": metas(m.inputs), "outputs": metas(m.outputs),
	})
}

func (s *Server) modelReady(w http.ResponseWriter, r *http.Request) {
	m, err := s.lookup(r.PathValue("name"), r.PathValue("version"))
	if err != nil {
		writeError(w, err)
		return
	}
	ready, reason := s.modelReadiness(m)
	body := map[string]any{"name": m.name, "ready": ready}
	if reason != "" {
		body["reason"] = reason
	}
	writeJSON(w, readyStatus(ready), body)
}

// restRequest is the JSON of an inference request.
type restRequest struct {
	ID         *string                    `json:"id"`
	Parameters map[string]json.RawMessage `json:"parameters"`
	Inputs     restInputList              `json:"inputs"`
	Outputs    restOutputList             `json:"outputs"`
}

type restInput struct {
	Name       string                     `json:"name"`
	Shape      shapeDims                  `json:"shape"`
	Datatype   string                     `json:"datatype"`
	Parameters map[string]json.RawMessage `json:"parameters"`
	Data       json.RawMessage            `json:"data"`
}

type restOutput struct {
	Name       string                     `json:"name"`
	Parameters map[string]json.RawMessage `json:"parameters"`
}

// inferHTTP is POST .../infer: JSON tensors, or the JSON header followed by binary
// tensor data.
func (s *Server) inferHTTP(w http.ResponseWriter, r *http.Request) {
	var req restRequest
	var outs []outputChoice
	// The request's inputs may be views of the body's buffer until it is answered.
	var buf *bodyBuffer
	defer func() { buf.release() }()
	h := s.hold()
	defer h.release()
	// Inputs and outputs in shared memory: their regions are held until the answer.
	use := s.newShmUse()
	failed := false
	defer func() { use.release(failed) }()
	parse := func(m *servedModel) ([]wireInput, error) {
		body, b, err := s.readBody(w, r, h)
		if err != nil {
			return nil, err
		}
		buf = b
		header, binary, err := splitBody(r, body)
		if err != nil {
			return nil, err
		}
		if err := h.take(jsonStructBytes(header)); err != nil {
			return nil, err
		}
		if err := parseRequest(header, &req); err != nil {
			return nil, errorf(KindInvalid, "request JSON: %v", err)
		}
		// encoding/json copied each input's JSON data out of the body.
		if err := h.take(jsonDataBytes(req.Inputs)); err != nil {
			return nil, err
		}
		if err := checkParams("request", req.Parameters); err != nil {
			return nil, err
		}
		if outs, err = chooseOutputs(m, req); err != nil {
			return nil, err
		}
		shmIns, rest, err := use.restInputs(req.Inputs)
		if err != nil {
			return nil, err
		}
		ins, err := restInputs(rest, binary)
		if err != nil {
			return nil, err
		}
		ins = append(ins, shmIns...)
		return ins, use.restOutputs(m, outs, ins)
	}
	m, rep, err := s.inferHeld(r.Context(), h, r.PathValue("name"), r.PathValue("version"), parse)
	if err == nil {
		err = use.write(m, rep)
	}
	if err == nil {
		err = h.take(answerBytes(m, outs, rep))
	}
	if err != nil {
		failed = deviceFailed(err)
		writeError(w, err)
		return
	}
	// The answer is written within the read timeout too: a client that does not read
	// it must not hold the request's memory.
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Now().Add(s.opts.ReadTimeout))
	writeInferResponse(w, m, &req, outs, rep)
	_ = rc.SetWriteDeadline(time.Time{}) // the connection's next request has its own
}

// splitBody separates the JSON header from the binary tensor data that follows it.
func splitBody(r *http.Request, body []byte) (header, binary []byte, err error) {
	v := r.Header.Get(headerJSONLength)
	if v == "" {
		return body, nil, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > int64(len(body)) {
		return nil, nil, errorf(KindInvalid, "%s: %q is not a length within the %d-byte body", headerJSONLength, v, len(body))
	}
	return body[:n], body[n:], nil
}

// checkParams checks that every parameter value is a string, number or boolean.
func checkParams(where string, params map[string]json.RawMessage) error {
	for k, v := range params {
		t := bytes.TrimSpace(v)
		if len(t) == 0 || t[0] == '{' || t[0] == '[' || t[0] == 'n' {
			return errorf(KindInvalid, "%s parameter %q: %s is not a string, number or boolean", where, k, t)
		}
	}
	return nil
}

// paramBool reads a boolean parameter; absent is false.
func paramBool(params map[string]json.RawMessage, name, where string) (bool, error) {
	v, ok := params[name]
	if !ok {
		return false, nil
	}
	var b bool
	if err := json.Unmarshal(v, &b); err != nil {
		return false, errorf(KindInvalid, "%s parameter %q: %s is not a boolean", where, name, v)
	}
	return b, nil
}

// restInputs turns a request's inputs into wire inputs, taking the binary data of those
// with binary_data_size from binary in order.
func restInputs(inputs []restInput, binary []byte) ([]wireInput, error) {
	out := make([]wireInput, 0, len(inputs))
	off := 0
	for _, in := range inputs {
		where := fmt.Sprintf("input %q", in.Name)
		if err := checkParams(where, in.Parameters); err != nil {
			return nil, err
		}
		if in.Shape == nil {
			return nil, errorf(KindInvalid, "%s has no shape", where)
		}
		wi := wireInput{name: in.Name, datatype: in.Datatype, shape: in.Shape}
		if raw, ok := in.Parameters[paramBinarySize]; ok {
			size, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
			if err != nil || size < 0 {
				return nil, errorf(KindInvalid, "%s: %s %s is not a byte count", where, paramBinarySize, raw)
			}
			if size > int64(len(binary)-off) {
				return nil, errorf(KindInvalid, "%s: %s is %d, but only %d bytes of binary data are left after the JSON", where, paramBinarySize, size, len(binary)-off)
			}
			if len(in.Data) > 0 {
				return nil, errorf(KindInvalid, "%s has both data and %s", where, paramBinarySize)
			}
			wi.raw = binary[off : off+int(size)]
			wi.fill = rawFill(in.Name, in.Datatype, wi.raw)
			off += int(size)
		} else {
			if len(in.Data) == 0 {
				return nil, errorf(KindInvalid, "%s has neither data nor %s", where, paramBinarySize)
			}
			data, name, dt := in.Data, in.Name, in.Datatype
			wi.check = func(elems int) error {
				if err := countJSONData(name, dt, data, elems); err != nil {
					return errorf(KindInvalid, "%v", err)
				}
				return nil
			}
			wi.fill = func(dst []float32) error { return decodeJSONData(name, dt, data, dst) }
		}
		out = append(out, wi)
	}
	if off != len(binary) {
		return nil, errorf(KindInvalid, "%d bytes of binary data follow the JSON, but the inputs' %s add up to %d", len(binary), paramBinarySize, off)
	}
	return out, nil
}

// rawFill decodes little-endian tensor data of a datatype the model takes.
func rawFill(name, datatype string, b []byte) func(dst []float32) error {
	return func(dst []float32) error {
		size := typeSize(datatype)
		if len(b) != len(dst)*size {
			return fmt.Errorf("input %q: %d bytes of data, its shape of %d %s elements takes %d", name, len(b), len(dst), datatype, len(dst)*size)
		}
		if i := decodeRaw(datatype, b, dst); i >= 0 {
			return fmt.Errorf("input %q: value %d is beyond ±2^24, which the model's float32 arithmetic cannot hold exactly", name, i)
		}
		return nil
	}
}

// outputChoice is one output a response carries.
type outputChoice struct {
	index  int
	binary bool
	// shm: the output goes into shared memory; the response carries no data for it.
	shm    bool
	params map[string]json.RawMessage
}

// chooseOutputs resolves the requested outputs (all of them when none is named) and
// whether each is returned as binary data.
func chooseOutputs(m *servedModel, req restRequest) ([]outputChoice, error) {
	all, err := paramBool(req.Parameters, paramBinaryAll, "request")
	if err != nil {
		return nil, err
	}
	if len(req.Outputs) == 0 {
		outs := make([]outputChoice, len(m.outputs))
		for i := range outs {
			outs[i] = outputChoice{index: i, binary: all}
		}
		return outs, nil
	}
	var outs []outputChoice
	seen := map[string]bool{}
	for _, o := range req.Outputs {
		i, err := m.outputIndex(o.Name)
		if err != nil {
			return nil, err
		}
		if seen[o.Name] {
			return nil, errorf(KindInvalid, "output %q is requested twice", o.Name)
		}
		seen[o.Name] = true
		where := fmt.Sprintf("output %q", o.Name)
		if err := checkParams(where, o.Parameters); err != nil {
			return nil, err
		}
		bin, err := paramBool(o.Parameters, paramBinary, where)
		if err != nil {
			return nil, err
		}
		outs = append(outs, outputChoice{index: i, binary: bin || all, params: o.Parameters})
	}
	return outs, nil
}

// writeInferResponse writes the response JSON, followed by the binary outputs' data
// when there are any.
func writeInferResponse(w http.ResponseWriter, m *servedModel, req *restRequest, outs []outputChoice, rep *reply) {
	items := 1
	if m.batched && len(m.outputs) > 0 {
		items = len(rep.outputs[0]) / max(m.outputs[0].row, 1)
	}
	b := make([]byte, 0, 256)
	b = append(b, `{"model_name":`...)
	b = appendJSONString(b, m.name)
	b = append(b, `,"model_version":"`+modelVersion+`"`...)
	if req.ID != nil {
		b = append(b, `,"id":`...)
		b = appendJSONString(b, *req.ID)
	}
	if p := echoParams(req.Parameters, paramBinaryAll); len(p) > 0 {
		b = append(b, `,"parameters":`...)
		b = append(b, p...)
	}
	b = append(b, `,"outputs":[`...)
	var blobs [][]byte
	for k, o := range outs {
		t := &m.outputs[o.index]
		data := rep.outputs[o.index]
		if k > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = appendJSONString(b, t.name)
		b = append(b, `,"datatype":"`...)
		b = append(b, t.datatype...)
		b = append(b, `","shape":[`...)
		for i, d := range t.shape {
			if i > 0 {
				b = append(b, ',')
			}
			if i == 0 && m.batched {
				d = items
			}
			b = strconv.AppendInt(b, int64(d), 10)
		}
		b = append(b, ']')
		params := echoParams(o.params, paramBinary)
		if o.binary {
			blob := rawBytes(t.datatype, data)
			blobs = append(blobs, blob)
			params = addParam(params, paramBinarySize, strconv.Itoa(len(blob)))
		}
		if len(params) > 0 {
			b = append(b, `,"parameters":`...)
			b = append(b, params...)
		}
		if !o.binary && !o.shm {
			b = append(b, `,"data":[`...)
			b = appendJSONValues(b, t.datatype, data)
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	b = append(b, "]}"...)
	h := w.Header()
	if len(blobs) == 0 {
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(b)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(b)
		return
	}
	total := len(b)
	for _, blob := range blobs {
		total += len(blob)
	}
	h.Set("Content-Type", "application/octet-stream")
	h.Set(headerJSONLength, strconv.Itoa(len(b)))
	h.Set("Content-Length", strconv.Itoa(total))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
	for _, blob := range blobs {
		_, _ = w.Write(blob)
	}
}

// appendJSONString appends s as a JSON string, as encoding/json writes it.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// echoParams is the JSON object of params without the extension's own parameter
// skip, or nil when nothing is left. Keys are sorted, so responses are stable.
func echoParams(params map[string]json.RawMessage, skip string) []byte {
	if len(params) == 0 || (len(params) == 1 && params[skip] != nil) {
		return nil
	}
	c := make(map[string]json.RawMessage, len(params))
	for k, v := range params {
		if k != skip {
			c[k] = v
		}
	}
	b, err := json.Marshal(c)
	if err != nil {
		return nil
	}
	return b
}

// addParam adds "name": value (raw JSON) to a JSON object (nil: an empty one).
func addParam(obj []byte, name, value string) []byte {
	out := make([]byte, 0, len(obj)+len(name)+len(value)+8)
	if len(obj) == 0 {
		out = append(out, '{')
	} else {
		out = append(out, obj[:len(obj)-1]...)
		out = append(out, ',')
	}
	out = appendJSONString(out, name)
	out = append(out, ':')
	out = append(out, value...)
	return append(out, '}')
}
