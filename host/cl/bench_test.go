package cl

import "testing"

// benchSetup builds a trivial kernel so the benchmarks measure host cost per enqueue.
func benchSetup(b *testing.B) (*Queue, *Kernel) {
	ctx := newTestContext(b)
	q, err := ctx.NewQueue(QueueOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(q.Release)
	p, err := ctx.BuildProgram(vecSrc, "")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.Release)
	k, _ := p.Kernel("scale")
	b.Cleanup(k.Release)
	buf, _ := ctx.NewBuffer(MemReadWrite, 64*4)
	b.Cleanup(buf.Release)
	_ = k.SetArgBuffer(0, buf)
	_ = k.SetArgFloat32(1, 1)
	return q, k
}

const benchBatch = 256

// BenchmarkEnqueueBinding is the cost of one enqueue (with its event) through the binding.
func BenchmarkEnqueueBinding(b *testing.B) {
	q, k := benchSetup(b)
	global := []int{64}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ev, err := q.EnqueueNDRange(k, global, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		ev.Release()
		if i%benchBatch == benchBatch-1 {
			_ = q.Finish()
		}
	}
	_ = q.Finish()
}

// BenchmarkEnqueueRawC is the same enqueue from a C loop: the baseline for the ratio.
func BenchmarkEnqueueRawC(b *testing.B) {
	q, k := benchSetup(b)
	global := []int{64}
	b.ResetTimer()
	for done := 0; done < b.N; done += benchBatch {
		n := min(benchBatch, b.N-done)
		if err := RawEnqueueLoop(q, k, global, nil, n, true); err != nil {
			b.Fatal(err)
		}
		_ = q.Finish()
	}
}
