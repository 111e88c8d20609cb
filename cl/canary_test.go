package cl

import (
	"os"
	"testing"
)

// TestOclgrindCanary runs a kernel that reads one float past its input buffer. It runs
// only in make check-kernels (CLHOST_TEST_CANARY=1, under oclgrind), which fails unless
// oclgrind's report of this read reaches its log: the proof that a real fault would.
func TestOclgrindCanary(t *testing.T) {
	if os.Getenv("CLHOST_TEST_CANARY") != "1" {
		t.Skip("run by make check-kernels under oclgrind (CLHOST_TEST_CANARY=1)")
	}
	ctx := newTestContext(t)
	q, err := ctx.NewQueue(QueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Release()
	prog, err := ctx.BuildProgram(`__kernel void canary_overrun(__global const float* x, __global float* y)
{
    const int i = get_global_id(0);
    y[i] = x[i + 1];
}`, "")
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Release()
	k, err := prog.Kernel("canary_overrun")
	if err != nil {
		t.Fatal(err)
	}
	defer k.Release()
	x, err := ctx.NewBufferFrom(MemReadOnly, floatsToBytes([]float32{1, 2, 3, 4}))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Release()
	y, err := ctx.NewBuffer(MemWriteOnly, 16)
	if err != nil {
		t.Fatal(err)
	}
	defer y.Release()
	if err := k.SetArgBuffer(0, x); err != nil {
		t.Fatal(err)
	}
	if err := k.SetArgBuffer(1, y); err != nil {
		t.Fatal(err)
	}
	ev, err := q.EnqueueNDRange(k, []int{4}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Release()
	if err := ev.Wait(); err != nil {
		t.Fatal(err)
	}
}
