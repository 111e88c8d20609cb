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

// storageHalfLine opens every half plan's program: the mark IsHalfPlan looks for.
const storageHalfLine = "#define STORAGE_HALF 1\n"

// halfCopy is both forms' COPY_DATA: a half moves as its 16 bits.
const halfCopy = "#define COPY_DATA(y, i, x, j) (((__global ushort*)(y))[i] = ((const __global ushort*)(x))[j])\n"

// halfDefines switch a kernel source written with DATA_T and the LOAD_DATA /
// STORE_DATA macros (LOAD_HALF_N / STORE_HALF_N for n lanes) to half storage; each such
// .cl file defines the float forms itself when DATA_T is not defined, so its float
// program text needs nothing from Go. GPUs convert with vload_half / vstore_half, which
// their hardware does in an instruction. CPU drivers may convert in software one value
// at a time (PoCL's x86 library does: a half-storing convolution ran 7× slower than its
// float form), so CPUs get halfBitsSource's conversions, which vectorise.
func halfDefines(dev DeviceInfo) string {
	if dev.IsGPU {
		return storageHalfLine + gpuHalfMacros + halfCopy
	}
	return storageHalfLine + cpuHalfMacros + halfCopy + halfBitsSource
}

const gpuHalfMacros = `#define DATA_T half
#define LOAD_DATA(p, i) vload_half((i), (p))
#define STORE_DATA(p, i, v) vstore_half((v), (i), (p))
#define LOAD_DATA16(i, p) vload_half16((i), (p))
#define STORE_DATA16(v, i, p) vstore_half16((v), (i), (p))
#define CLHOST_CAT_(a, b) a##b
#define CLHOST_CAT(a, b) CLHOST_CAT_(a, b)
#define LOAD_HALF_N(n, i, p) CLHOST_CAT(vload_half, n)((i), (p))
#define STORE_HALF_N(n, v, i, p) CLHOST_CAT(vstore_half, n)((v), (i), (p))
`

// cpuHalfMacros read and write a half tensor's bits as ushort and convert them with
// halfBitsSource's functions (global memory only: every tensor argument is).
const cpuHalfMacros = `#define DATA_T half
#define CLHOST_CAT_(a, b) a##b
#define CLHOST_CAT(a, b) CLHOST_CAT_(a, b)
#define LOAD_DATA(p, i) clhost_h2f(((const __global ushort*)(p))[i])
#define STORE_DATA(p, i, v) (((__global ushort*)(p))[i] = clhost_f2h(v))
#define LOAD_HALF_N(n, i, p) CLHOST_CAT(clhost_h2f, n)(CLHOST_CAT(vload, n)((i), (const __global ushort*)(p)))
#define STORE_HALF_N(n, v, i, p) CLHOST_CAT(vstore, n)(CLHOST_CAT(clhost_f2h, n)(v), (i), (__global ushort*)(p))
#define LOAD_DATA16(i, p) LOAD_HALF_N(16, i, p)
#define STORE_DATA16(v, i, p) STORE_HALF_N(16, v, i, p)
`

// halfBitsSource converts between half bits and float with integer operations and
// vector conditionals, exactly as vload_half and vstore_half (round to nearest even) do, for every
// value: zeros, subnormals (through a normal float subtraction or addition, so a
// flush-to-zero mode changes nothing), infinities and NaNs. Written here because
// OpenCL offers no vectorising form and a CPU driver's own may be scalar software.
const halfBitsSource = `#define CLHOST_HALF_BITS(S, U, US, F)                                                   \
static inline F clhost_h2f##S(US hs)                                                  \
{                                                                                     \
    const U h = convert_##U(hs);                                                      \
    U o = (h & 0x7fffu) << 13;                                                        \
    const U ex = o & 0x0f800000u;                                                     \
    o += 0x38000000u;                                                                 \
    F f = as_##F(o);                                                                  \
    f = ex == 0x0f800000u ? as_##F(o + 0x38000000u) : f;                              \
    f = ex == 0u ? as_##F(o + 0x00800000u) - as_##F((U)0x38800000u) : f;              \
    return as_##F(as_##U(f) | ((h & 0x8000u) << 16));                                 \
}                                                                                     \
static inline US clhost_f2h##S(F x)                                                   \
{                                                                                     \
    U f = as_##U(x);                                                                  \
    const U sign = f & 0x80000000u;                                                   \
    f ^= sign;                                                                        \
    const U nan = f > 0x7f800000u ? (U)0x7e00u : (U)0x7c00u;                          \
    const U sub = as_##U(as_##F(f) + 0.5f) - 0x3f000000u;                             \
    const U nor = (f + 0xc8000fffu + ((f >> 13) & 1u)) >> 13;                         \
    U o = f < 0x38800000u ? sub : nor;                                                \
    o = f >= 0x47800000u ? nan : o;                                                   \
    return convert_##US(o | (sign >> 16));                                            \
}
CLHOST_HALF_BITS(, uint, ushort, float)
CLHOST_HALF_BITS(2, uint2, ushort2, float2)
CLHOST_HALF_BITS(4, uint4, ushort4, float4)
CLHOST_HALF_BITS(8, uint8, ushort8, float8)
CLHOST_HALF_BITS(16, uint16, ushort16, float16)
`

// halfPlan turns a plan whose source uses the storage macros into its half-storage
// form for dev. Scratch sizes stay as the plan gave them: they are the kernels' own
// buffers.
func halfPlan(plan *Plan, dev DeviceInfo) *Plan {
	if plan == nil || IsHalfPlan(plan) {
		return plan
	}
	plan.Source = halfDefines(dev) + plan.Source
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
	return plan != nil && strings.HasPrefix(plan.Source, storageHalfLine)
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
// copy. ok is false where they cannot (their source does not define TAKES_FLOAT_X).
func ReadInputAsFloat(plan *Plan) (*Plan, bool) {
	if !IsHalfPlan(plan) || !strings.Contains(plan.Source, "#define TAKES_FLOAT_X 1") {
		return plan, false
	}
	q := *plan
	q.Source = storageHalfLine + "#define X_FLOAT 1\n" + strings.TrimPrefix(plan.Source, storageHalfLine)
	return &q, true
}
