package cl

import (
	"fmt"
	"sync"
	"testing"
)

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

// BenchmarkInputWrite is one batch-16 image input (9.6 MB) written into a device buffer
// as a blocking write and as a map filled by several goroutines.
func BenchmarkInputWrite(b *testing.B) {
	ctx := newTestContext(b)
	q, err := ctx.NewQueue(QueueOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(q.Release)
	const size = 16 * 3 * 224 * 224 * 4
	buf, err := ctx.NewBuffer(MemReadWrite, size+4096)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(buf.Release)
	src := make([]byte, size)
	for i := range src {
		src[i] = byte(i)
	}
	b.Run("write", func(b *testing.B) {
		b.SetBytes(size)
		for i := 0; i < b.N; i++ {
			if err := q.Write(buf, 4096, src, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, shares := range []int{1, 4, 8} {
		b.Run(fmt.Sprintf("map%d", shares), func(b *testing.B) {
			b.SetBytes(size)
			for i := 0; i < b.N; i++ {
				m, err := q.MapWrite(buf, 4096, size)
				if err != nil {
					b.Fatal(err)
				}
				var wg sync.WaitGroup
				for s := range shares {
					wg.Add(1)
					go func() {
						defer wg.Done()
						lo, hi := size*s/shares, size*(s+1)/shares
						copy(m.Bytes[lo:hi], src[lo:hi])
					}()
				}
				wg.Wait()
				if err := m.Unmap(); err != nil {
					b.Fatal(err)
				}
				if err := q.Finish(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
