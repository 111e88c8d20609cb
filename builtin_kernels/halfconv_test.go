package builtinkernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/clhost/clhost/model"
)

// TestHalfStorageConversionsExact holds the storage macros of half plans, both forms
// (the GPU's vload_half / vstore_half, the CPU's bit conversions), scalar and 16 lanes,
// to IEEE half on the test device: LOAD_DATA widens every one of the 65,536 halves
// exactly, and STORE_DATA rounds floats (ties, subnormals, the overflow edge,
// infinities, NaN, random values) to nearest even, as model.Float32ToHalf does.
func TestHalfStorageConversionsExact(t *testing.T) {
	env := deviceEnv(t)
	for _, gpu := range []bool{false, true} {
		for _, lanes := range []int{1, 16} {
			t.Run(fmt.Sprintf("gpu=%v,lanes=%d", gpu, lanes), func(t *testing.T) {
				testHalfConversions(t, env, halfDefines(DeviceInfo{IsGPU: gpu}), lanes)
			})
		}
	}
}

func testHalfConversions(t *testing.T, env *testEnv, defines string, lanes int) {
	src := defines + fmt.Sprintf("#define LANES %d\n", lanes) + `
#if LANES == 1
#define LOAD_L(i, p) LOAD_DATA(p, i)
#define STORE_L(v, i, p) STORE_DATA(p, i, v)
#define CAT_L(i, y, v) ((y)[i] = (v))
#define FLOAT_L(i, x) ((x)[i])
#else
#define CAT_L(i, y, v) vstore16((v), (i), (y))
#define FLOAT_L(i, x) vload16((i), (x))
#define LOAD_L(i, p) LOAD_HALF_N(16, i, p)
#define STORE_L(v, i, p) STORE_HALF_N(16, v, i, p)
#define floatL float16
#endif
__kernel void widen(__global const half* restrict x, int x_off, __global float* restrict y, int y_off, int n)
{
    x += x_off;
    y += y_off;
    const int i = get_global_id(0);
    if ((i + 1) * LANES <= n) {
        CAT_L(i, y, LOAD_L(i, x));
    }
}
__kernel void narrow(__global const float* restrict x, int x_off, __global half* restrict y, int y_off, int n)
{
    x += x_off;
    y += y_off;
    const int i = get_global_id(0);
    if ((i + 1) * LANES <= n) {
        STORE_L(FLOAT_L(i, x), i, y);
    }
}
`
	prog, err := env.ctx.BuildProgram(src, "")
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Release()
	q := mustQueue(t, env)

	// Every half, widened: the input is the bits, stored as float32 values of the same
	// bit pattern's half (the test reads them back through RunPlanStored's codecs).
	halves := make([]float32, 1<<16)
	for h := range halves {
		halves[h] = model.HalfToFloat32(uint16(h))
	}
	widen := &Plan{Source: src, AliasInput: -1, Launches: []Launch{{Kernel: "widen", Global: []int{len(halves) / lanes},
		Args: []Arg{{Kind: ArgInput}, {Kind: ArgOutput}, {Kind: ArgInt, Int: int32(len(halves))}}}}}
	got, err := RunPlanStored(env.ctx, q, widen, []*HostTensor{{Shape: []int{len(halves)}, Data: halves}}, [][]int{{len(halves)}},
		Storage{Inputs: []bool{true}, Outputs: []bool{false}})
	if err != nil {
		t.Fatal(err)
	}
	for h, v := range got[0].Data {
		want := halves[h]
		if math.Float32bits(v) != math.Float32bits(want) && !(math.IsNaN(float64(v)) && math.IsNaN(float64(want))) {
			t.Fatalf("LOAD_DATA of half %#04x: %v (%#08x), want %v", h, v, math.Float32bits(v), want)
		}
	}

	var fs []float32
	for _, b := range []uint32{0, 0x80000000, 0x33000000, 0x33000001, 0x337fffff, 0x38800000, 0x387fffff, 0x387fe000,
		0x477fe000, 0x477fefff, 0x477ff000, 0x47800000, 0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001, 0x3f801000, 0x3f803000, 0x3f800fff} {
		fs = append(fs, math.Float32frombits(b))
	}
	for h := 0; h < 0x7c00; h++ {
		// Each half and the midpoints next to it: ties go to even.
		f := float64(model.HalfToFloat32(uint16(h)))
		next := float64(model.HalfToFloat32(uint16(h + 1)))
		fs = append(fs, float32(f), float32((f+next)/2), -float32((f+next)/2))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		fs = append(fs, float32(rng.NormFloat64()*math.Pow(2, float64(rng.IntN(40)-25))))
	}
	fs = fs[:len(fs)/lanes*lanes]
	narrow := &Plan{Source: src, AliasInput: -1, Launches: []Launch{{Kernel: "narrow", Global: []int{len(fs) / lanes},
		Args: []Arg{{Kind: ArgInput}, {Kind: ArgOutput}, {Kind: ArgInt, Int: int32(len(fs))}}}}}
	got, err = RunPlanStored(env.ctx, q, narrow, []*HostTensor{{Shape: []int{len(fs)}, Data: fs}}, [][]int{{len(fs)}},
		Storage{Inputs: []bool{false}, Outputs: []bool{true}})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got[0].Data {
		want := model.HalfToFloat32(model.Float32ToHalf(fs[i]))
		if math.Float32bits(v) != math.Float32bits(want) && !(math.IsNaN(float64(v)) && math.IsNaN(float64(want))) {
			t.Fatalf("STORE_DATA of %v (%#08x): %v, want %v", fs[i], math.Float32bits(fs[i]), v, want)
		}
	}
}
