package builtinkernels

import (
	"encoding/binary"
	"strings"

	"github.com/clhost/clhost/model"
)

// HalfStorer is an op whose kernels can keep tensors as IEEE half in device memory
// (fp16 storage): every buffer its launches take as an input or an output holds 2 bytes
// per element, read with vload_half and written with vstore_half, while the arithmetic
// stays float, so it runs on devices without half arithmetic (PoCL's CPUs) too. Element
// offsets (BufferRef.Off) of such buffers count halves. ok is false where this instance
// cannot (a 3-D convolution, a fused pool): the host then runs Plan's float kernels and
// converts around them.
type HalfStorer interface {
	PlanHalf(p Params, in, out [][]int, dev DeviceInfo) (plan *Plan, ok bool, err error)
}

// halfDefines switch a kernel source written with DATA_T and the LOAD_DATA /
// STORE_DATA macros to half storage; each such .cl file defines the float forms itself
// when DATA_T is not defined, so its float program text needs nothing from Go.
const halfDefines = `#define STORAGE_HALF 1
#define DATA_T half
#define LOAD_DATA(p, i) vload_half((i), (p))
#define STORE_DATA(p, i, v) vstore_half((v), (i), (p))
#define LOAD_DATA16(i, p) vload_half16((i), (p))
#define STORE_DATA16(v, i, p) vstore_half16((v), (i), (p))
`

// halfPlan turns a plan whose source uses the storage macros into its half-storage
// form. Scratch sizes stay as the plan gave them: they are the kernels' own buffers.
func halfPlan(plan *Plan) *Plan {
	if plan == nil || strings.HasPrefix(plan.Source, halfDefines) {
		return plan
	}
	plan.Source = halfDefines + plan.Source
	return plan
}

// storageType is the element type of a kernel's tensor parameters.
func storageType(half bool) string {
	if half {
		return "DATA_T"
	}
	return "float"
}

// Storage says which of a plan's inputs and outputs are held as half, by index.
type Storage struct {
	Inputs, Outputs []bool
}

func (Storage) half(list []bool, i int) bool { return i < len(list) && list[i] }

// IsHalfPlan says whether a plan's kernels store half (PlanHalf's plans).
func IsHalfPlan(plan *Plan) bool {
	return plan != nil && strings.HasPrefix(plan.Source, halfDefines)
}

// PlanStorage is the storage of a plan's own tensors: all half for a half plan, all
// float otherwise.
func PlanStorage(plan *Plan, inputs, outputs int) Storage {
	var st Storage
	if IsHalfPlan(plan) {
		st.Inputs, st.Outputs = make([]bool, inputs), make([]bool, outputs)
		for i := range st.Inputs {
			st.Inputs[i] = true
		}
		for i := range st.Outputs {
			st.Outputs[i] = true
		}
	}
	return st
}

// floatsToHalfBytes rounds float32 values to half, little-endian.
func floatsToHalfBytes(f []float32) []byte {
	b := make([]byte, 2*len(f))
	for i, v := range f {
		binary.LittleEndian.PutUint16(b[2*i:], model.Float32ToHalf(v))
	}
	return b
}

// halfBytesToFloats widens little-endian half values to float32.
func halfBytesToFloats(b []byte) []float32 {
	f := make([]float32, len(b)/2)
	for i := range f {
		f[i] = model.HalfToFloat32(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return f
}

// ReadInputAsFloat makes a half plan read its input 0 (x) as float, where its kernels
// can (their X_FLOAT define): a graph input, which stays float, then needs no converted
// copy. ok is false where they cannot.
func ReadInputAsFloat(plan *Plan) (*Plan, bool) {
	if !IsHalfPlan(plan) || !strings.Contains(plan.Source, "#ifdef X_FLOAT") {
		return plan, false
	}
	q := *plan
	q.Source = halfDefines + "#define X_FLOAT 1\n" + strings.TrimPrefix(plan.Source, halfDefines)
	return &q, true
}
