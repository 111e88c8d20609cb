package host

import (
	"fmt"
	"testing"

	"github.com/clhost/clhost/cl"
	"github.com/clhost/clhost/model"
)

// benchChain is a network of 16 small layers, so per-layer host cost dominates.
func benchChain(b *testing.B) *Network {
	mb := model.NewBuilder("chain")
	y := mb.Input("x", model.Float32, 1, 64)
	for i := 0; i < 16; i++ {
		y = mb.Layer("Relu", fmt.Sprintf("r%d", i), []string{y})
	}
	mb.Output(y)
	m, err := mb.Build()
	if err != nil {
		b.Fatal(err)
	}
	e := newTestEngine(b, Options{NoGlobalConfig: true})
	n, err := e.Compile(m)
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkNetworkEnqueuePerLayer is the host cost per layer of submitting a whole
// network through Infer's own submission (wait lists of producer events on an
// out-of-order queue), reported per layer; BenchmarkRawChainPerLayer enqueues the same
// kernels with the same wait lists from a C loop. Their ratio is the binding's and
// runtime's overhead.
func BenchmarkNetworkEnqueuePerLayer(b *testing.B) {
	n := benchChain(b)
	q := n.engine.queue
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		events, err := n.submit(q, true)
		if err != nil {
			b.Fatal(err)
		}
		if err := q.Finish(); err != nil {
			b.Fatal(err)
		}
		for _, evs := range events {
			for _, e := range evs {
				e.Release()
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(n.steps)), "ns/layer")
}

// BenchmarkRawChainPerLayer is the same chain enqueued from C with the same wait lists
// (each kernel after the previous): the fair baseline on an out-of-order queue.
func BenchmarkRawChainPerLayer(b *testing.B) {
	n := benchChain(b)
	q := n.engine.queue
	var kernels []*cl.Kernel
	for _, s := range n.steps {
		for _, la := range s.launches {
			kernels = append(kernels, la.kernel)
		}
	}
	// The network's own work sizes: a driver's cost per enqueue depends on them.
	first := n.steps[0].launches[0]
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := cl.RawEnqueueChain(q, kernels, first.global, first.local); err != nil {
			b.Fatal(err)
		}
		if err := q.Finish(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(n.steps)), "ns/layer")
}

func BenchmarkRawEnqueuePerLayer(b *testing.B) {
	n := benchChain(b)
	q := n.engine.queue
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, s := range n.steps {
			for _, la := range s.launches {
				if err := cl.RawEnqueueLoop(q, la.kernel, la.global, la.local, 1, true); err != nil {
					b.Fatal(err)
				}
			}
		}
		if err := q.Finish(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(n.steps)), "ns/layer")
}

// BenchmarkChainOnlyPerLayer is the network's launch chain submitted by itself, without
// the rest of an inference's submission: what cl.Chain costs against the C loop.
func BenchmarkChainOnlyPerLayer(b *testing.B) {
	n := benchChain(b)
	q := n.engine.queue
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := q.SubmitChain(n.chain, true); err != nil {
			b.Fatal(err)
		}
		if err := q.Finish(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(n.steps)), "ns/layer")
}
