package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unsafe"
)

// The system shared-memory extension (Triton's "system_shared_memory"): a client on
// the same host registers regions of its POSIX shared-memory objects (/dev/shm/<key>),
// and inputs and outputs whose parameters name a region are read from and written into
// it instead of crossing the connection. The server maps each region once, when it is
// registered. An input in a region is used where it lies: its float32 data is the
// request's input, which the device reads from the mapping (a CPU device in place).
//
// A region is counted once for its registration and once per request using it, and
// unmapped when the count drops to zero: unregistering a region that requests are
// reading or writing only stops new requests from naming it.

// Parameter names of the extension.
const (
	paramShmRegion = "shared_memory_region"
	paramShmSize   = "shared_memory_byte_size"
	paramShmOffset = "shared_memory_offset"
)

// extSharedMemory is the extension's name in server metadata.
const extSharedMemory = "system_shared_memory"

// shmDir is where POSIX shared-memory objects lie (shm_open's names), as files.
const shmDir = "/dev/shm"

// maxShmRegions bounds the regions registered at once: each holds a mapping and an open
// file, and a client must not be able to exhaust either.
const maxShmRegions = 1024

// maxShmName bounds a region's name: the registry holds every name, and an error
// naming an unknown region lists some of them.
const maxShmName = 256

// shmRegistry holds the registered regions of a server.
type shmRegistry struct {
	mu      sync.Mutex
	regions map[string]*shmRegion
}

// shmRegion is one registered region and its mapping.
type shmRegion struct {
	name, key    string
	offset, size int64
	obj          *shmObject
	// data is the region's bytes within the mapping.
	data []byte
	// refs counts the registration (until unregistered) and each request holding the
	// region; under the registry's lock.
	refs int
	// keep says the mapping is never unmapped: a device that failed mid-inference may
	// still be reading an input from it.
	keep bool
}

// shmStatus is a region as the status endpoints describe it.
type shmStatus struct {
	Name     string `json:"name"`
	Key      string `json:"key"`
	Offset   int64  `json:"offset"`
	ByteSize int64  `json:"byte_size"`
}

// extensions lists the protocol extensions this server offers.
func (s *Server) extensions() []string {
	if !s.opts.SharedMemory {
		return extensions
	}
	return append(extensions[:len(extensions):len(extensions)], extSharedMemory)
}

// shmEnabled fails unless the server was started with shared memory allowed.
func (s *Server) shmEnabled() error {
	if !s.opts.SharedMemory {
		return errorf(KindInvalid, "the %s extension is off: clients may map this host's shared memory only when the server is started with it allowed (clhost serve -allow-shm)", extSharedMemory)
	}
	return nil
}

// shmKeyName is the file name of a shared-memory object's key under shmDir: shm_open's
// names start with one slash, which clients give or leave out. Anything that is not a
// single file name is refused, so that no key reaches outside shmDir.
func shmKeyName(key string) (string, error) {
	k := strings.TrimPrefix(key, "/")
	if k == "" || k == "." || k == ".." || strings.ContainsAny(k, "/\x00") {
		return "", errorf(KindInvalid, "shared-memory key %q: a POSIX shared-memory object's name (one optional leading slash, then no slash)", key)
	}
	return k, nil
}

// register maps [offset, offset+size) of the object key and registers it as name.
func (s *Server) shmRegister(name, key string, offset, size int64) error {
	if err := s.shmEnabled(); err != nil {
		return err
	}
	if name == "" {
		return errorf(KindInvalid, "a shared-memory region needs a name")
	}
	if len(name) > maxShmName {
		return errorf(KindInvalid, "a shared-memory region's name has %d bytes, more than %d", len(name), maxShmName)
	}
	file, err := shmKeyName(key)
	if err != nil {
		return err
	}
	if offset < 0 || size <= 0 {
		return errorf(KindInvalid, "shared-memory region %q: offset %d and byte_size %d: the offset must be at least 0 and the size at least 1", name, offset, size)
	}
	if offset > (1<<62)-size {
		return errorf(KindInvalid, "shared-memory region %q: offset %d and byte_size %d end past 2^62 bytes, beyond any object", name, offset, size)
	}
	r := &s.shm
	r.mu.Lock()
	_, dup := r.regions[name]
	n := len(r.regions)
	r.mu.Unlock()
	if dup {
		return errorf(KindInvalid, "shared-memory region %q is already registered: unregister it first", name)
	}
	if n >= maxShmRegions {
		return errorf(KindInvalid, "shared-memory region %q: %d regions are registered, the most this server holds", name, n)
	}
	obj, data, err := mapShmObject(file, offset, size)
	if err != nil {
		return errorf(KindInvalid, "shared-memory region %q (key %q): %v", name, key, err)
	}
	reg := &shmRegion{name: name, key: key, offset: offset, size: size, obj: obj, data: data, refs: 1}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.regions[name]; dup { // registered meanwhile by another request
		obj.close()
		return errorf(KindInvalid, "shared-memory region %q is already registered: unregister it first", name)
	}
	if r.regions == nil {
		r.regions = map[string]*shmRegion{}
	}
	r.regions[name] = reg
	return nil
}

// shmUnregister unregisters one region, or every region when name is "". A name not
// registered is no error, as in Triton: unregistering is idempotent.
func (s *Server) shmUnregister(name string) error {
	if err := s.shmEnabled(); err != nil {
		return err
	}
	r := &s.shm
	r.mu.Lock()
	defer r.mu.Unlock()
	for n, reg := range r.regions {
		if name == "" || n == name {
			delete(r.regions, n)
			reg.unrefLocked()
		}
	}
	return nil
}

// shmCloseAll unregisters every region as the server closes.
func (s *Server) shmCloseAll() {
	if s.opts.SharedMemory {
		_ = s.shmUnregister("")
	}
}

// shmStatuses describes one region, or every region (by name) when name is "".
func (s *Server) shmStatuses(name string) ([]shmStatus, error) {
	if err := s.shmEnabled(); err != nil {
		return nil, err
	}
	r := &s.shm
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []shmStatus{}
	for n, reg := range r.regions {
		if name == "" || n == name {
			out = append(out, shmStatus{Name: n, Key: reg.key, Offset: reg.offset, ByteSize: reg.size})
		}
	}
	if name != "" && len(out) == 0 {
		return nil, errorf(KindInvalid, "no shared-memory region %q is registered (%s)", name, r.namesLocked())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (r *shmRegistry) namesLocked() string {
	if len(r.regions) == 0 {
		return "none is"
	}
	names := make([]string, 0, len(r.regions))
	for n := range r.regions {
		names = append(names, n)
	}
	sort.Strings(names)
	// A few names tell a client which it meant; all 1,024 would make the answer huge.
	const show = 8
	more := ""
	if len(names) > show {
		more = fmt.Sprintf(" and %d more", len(names)-show)
		names = names[:show]
	}
	for i, n := range names {
		names[i] = strconv.Quote(n)
	}
	return "registered: " + strings.Join(names, ", ") + more
}

// unrefLocked drops one count, unmapping the region at the last.
func (reg *shmRegion) unrefLocked() {
	reg.refs--
	if reg.refs == 0 && !reg.keep {
		reg.obj.close()
		reg.data = nil
	}
}

// shmRef is what a tensor's parameters say of its place in shared memory.
type shmRef struct {
	region       string
	offset, size int64
}

// shmUse is the shared memory one request reads and writes: the regions it holds until
// it is answered, and its outputs' places. A nil *shmUse is a request of a server
// without shared memory.
type shmUse struct {
	s    *Server
	held []*shmRegion
	// outs are the outputs written into shared memory, by model output index.
	outs map[int][]byte
}

func (s *Server) newShmUse() *shmUse { return &shmUse{s: s} }

// release drops the request's hold on its regions; failed says the request failed on
// its device, which may still be reading inputs from them: those stay mapped.
func (u *shmUse) release(failed bool) {
	if len(u.held) == 0 {
		return
	}
	r := &u.s.shm
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, reg := range u.held {
		if failed {
			reg.keep = true
		}
		reg.unrefLocked()
	}
	u.held = nil
}

// deviceFailed says whether a request's error may have come from a device that failed
// mid-inference (a timeout leaves the kernel running), which may still read inputs from
// the request's regions. Errors before the inference leave no region held except by
// the request itself.
func deviceFailed(err error) bool {
	k := kindOf(err)
	return err != nil && (k == KindInternal || k == KindUnavailable)
}

// span holds the region ref names and returns its bytes, checked against the region
// and against the object as it is now (a client that shrank its object would otherwise
// make the server fault on reading it).
func (u *shmUse) span(where string, ref shmRef) ([]byte, error) {
	if err := u.s.shmEnabled(); err != nil {
		return nil, err
	}
	r := &u.s.shm
	r.mu.Lock()
	reg, ok := r.regions[ref.region]
	if !ok {
		names := r.namesLocked()
		r.mu.Unlock()
		return nil, errorf(KindInvalid, "%s: unknown shared-memory region %q (%s)", where, ref.region, names)
	}
	reg.refs++
	checked := slices.Contains(u.held, reg) // the object's size was checked for this request
	u.held = append(u.held, reg)
	r.mu.Unlock()
	if ref.offset < 0 || ref.size < 0 || ref.offset > reg.size || ref.size > reg.size-ref.offset {
		return nil, errorf(KindInvalid, "%s: %d bytes at offset %d lie outside shared-memory region %q of %d bytes", where, ref.size, ref.offset, ref.region, reg.size)
	}
	if !checked {
		if err := reg.obj.covers(reg.offset + reg.size); err != nil {
			return nil, errorf(KindInvalid, "%s: shared-memory region %q (key %q): %v", where, ref.region, reg.key, err)
		}
	}
	return reg.data[ref.offset : ref.offset+ref.size : ref.offset+ref.size], nil
}

// jsonShmRef reads a REST tensor's shared-memory parameters; ok is false when it names
// no region.
func jsonShmRef(where string, params map[string]json.RawMessage) (ref shmRef, ok bool, err error) {
	region, hasRegion := params[paramShmRegion]
	size, hasSize := params[paramShmSize]
	offset, hasOffset := params[paramShmOffset]
	if !hasRegion && !hasSize && !hasOffset {
		return ref, false, nil
	}
	if !hasRegion || !hasSize {
		return ref, false, errorf(KindInvalid, "%s: %s and %s go together (%s is optional)", where, paramShmRegion, paramShmSize, paramShmOffset)
	}
	var err1, err2, err3 error
	ref.region, err1 = jsonString(region)
	if err1 != nil {
		return ref, false, errorf(KindInvalid, "%s: %s %s is not a string", where, paramShmRegion, region)
	}
	if ref.size, err2 = jsonInt(size); err2 != nil || ref.size < 0 {
		return ref, false, errorf(KindInvalid, "%s: %s %s is not a byte count", where, paramShmSize, size)
	}
	if hasOffset {
		if ref.offset, err3 = jsonInt(offset); err3 != nil || ref.offset < 0 {
			return ref, false, errorf(KindInvalid, "%s: %s %s is not a byte offset", where, paramShmOffset, offset)
		}
	}
	return ref, true, nil
}

// jsonString decodes a JSON string; one without escapes, a region's name, is taken as
// it is (encoding/json for each parameter of each tensor costs more than the rest of
// reading a request's shared-memory tensors).
func jsonString(raw json.RawMessage) (string, error) {
	t := bytes.TrimSpace(raw)
	if len(t) >= 2 && t[0] == '"' && t[len(t)-1] == '"' && bytes.IndexByte(t, '\\') < 0 {
		return string(t[1 : len(t)-1]), nil
	}
	var v string
	err := json.Unmarshal(raw, &v)
	return v, err
}

// jsonInt decodes a JSON integer.
func jsonInt(raw json.RawMessage) (int64, error) {
	if v, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64); err == nil {
		return v, nil
	}
	var v int64
	err := json.Unmarshal(raw, &v)
	return v, err
}

// restInputs resolves the REST inputs that lie in shared memory and returns them as
// wire inputs, and the others, which the request's data carries.
func (u *shmUse) restInputs(inputs []restInput) (shm []wireInput, rest []restInput, err error) {
	for _, in := range inputs {
		where := fmt.Sprintf("input %q", in.Name)
		ref, ok, err := jsonShmRef(where, in.Parameters)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			rest = append(rest, in)
			continue
		}
		if len(in.Data) > 0 {
			return nil, nil, errorf(KindInvalid, "%s has both data and %s", where, paramShmRegion)
		}
		if _, bin := in.Parameters[paramBinarySize]; bin {
			return nil, nil, errorf(KindInvalid, "%s has both %s and %s", where, paramBinarySize, paramShmRegion)
		}
		if in.Shape == nil {
			return nil, nil, errorf(KindInvalid, "%s has no shape", where)
		}
		wi, err := u.input(where, in.Name, in.Datatype, in.Shape, ref)
		if err != nil {
			return nil, nil, err
		}
		shm = append(shm, wi)
	}
	return shm, rest, nil
}

// input is an input read from shared memory: its raw data is the region's bytes where
// they lie, which decode takes as the request's FP32 input without a copy.
func (u *shmUse) input(where, name, datatype string, shape []int64, ref shmRef) (wireInput, error) {
	b, err := u.span(where, ref)
	if err != nil {
		return wireInput{}, err
	}
	return wireInput{name: name, datatype: datatype, shape: shape, raw: b, fill: rawFill(name, datatype, b)}, nil
}

// restOutputs marks the requested outputs that go into shared memory (they carry no
// data in the response) and checks that each region holds the output.
func (u *shmUse) restOutputs(m *servedModel, outs []outputChoice, ins []wireInput) error {
	for k := range outs {
		o := &outs[k]
		where := fmt.Sprintf("output %q", m.outputs[o.index].name)
		ref, ok, err := jsonShmRef(where, o.params)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if err := u.output(m, o.index, where, ref, ins); err != nil {
			return err
		}
		o.shm, o.binary = true, false
	}
	return nil
}

// output holds an output's place in shared memory, checked to hold the output of a
// request of the inputs' items.
func (u *shmUse) output(m *servedModel, index int, where string, ref shmRef, ins []wireInput) error {
	b, err := u.span(where, ref)
	if err != nil {
		return err
	}
	t := &m.outputs[index]
	items := int64(1)
	if m.batched && len(ins) > 0 && len(ins[0].shape) > 0 && ins[0].shape[0] > 0 {
		items = ins[0].shape[0] // a wrong shape is reported when the inputs are decoded
	}
	need := items * int64(t.row) * int64(typeSize(t.datatype))
	if int64(len(b)) < need {
		return errorf(KindInvalid, "%s: %s is %d bytes, its %d %s elements take %d", where, paramShmSize, len(b), items*int64(t.row), t.datatype, need)
	}
	if u.outs == nil {
		u.outs = map[int][]byte{}
	}
	u.outs[index] = b
	return nil
}

// inShm says whether the model's output index goes into shared memory.
func (u *shmUse) inShm(index int) bool {
	_, ok := u.outs[index]
	return ok
}

// write writes the reply's outputs that go into shared memory into their regions, in
// the protocol's little-endian layout.
func (u *shmUse) write(m *servedModel, rep *reply) error {
	for i, dst := range u.outs {
		t := &m.outputs[i]
		data := rep.outputs[i]
		need := len(data) * typeSize(t.datatype)
		if need > len(dst) {
			return errorf(KindInvalid, "output %q: %s is %d bytes, its %d %s elements take %d", t.name, paramShmSize, len(dst), len(data), t.datatype, need)
		}
		if err := writeShm(dst[:0:need], t.datatype, data); err != nil {
			return errorf(KindInvalid, "output %q: %v", t.name, err)
		}
	}
	return nil
}

// writeShm encodes data into dst's capacity, which holds it exactly. A client that
// shrinks its object between the check and the write makes the write fault: the fault
// fails the request instead of the server.
func writeShm(dst []byte, dt string, data []float32) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("writing into shared memory failed (was the object shrunk?): %v", r)
		}
	}()
	got := encodeRaw(dst, dt, data)
	if len(got) > 0 && unsafe.SliceData(got) != unsafe.SliceData(dst[:1]) {
		// encodeRaw appends within dst's capacity, which is the output's exact size:
		// reaching here means it reallocated, and the region did not get the data.
		copy(dst[:len(got)], got)
	}
	return nil
}
