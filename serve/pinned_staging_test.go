package serve

import (
	"math/rand"
	"testing"

	"github.com/clhost/clhost/host"
)

// TestPinnedStaging: with transfers through pinned buffers, batches are packed into
// the networks' own buffers, and their padding rows stay zero after a request that
// fills a whole inference was copied over them; every request gets its own image's
// result.
func TestPinnedStaging(t *testing.T) {
	opts := Options{MaxBatch: 4, BatchSizes: []int{1, 4}}
	opts.Devices, opts.DeviceNames = testDevices(t, 1)
	opts.Engine = host.Options{NoGlobalConfig: true, Pinned: host.On}
	s, err := New([]Source{reluSource()}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	in := s.models["relu"].instances[0]
	if !in.pinnedStaging {
		t.Fatal("Pinned On: the batches are not packed into the networks' pinned buffers")
	}
	in.mu.Lock()
	in.est[1], in.est[4] = 1, 1.5 // 2 and 3 items run as one padded inference of 4
	in.mu.Unlock()
	row := imgC * imgH * imgW
	rng := rand.New(rand.NewSource(10))
	// Per batch, the items of each request: 4 in one request fills the inference.
	for _, batch := range [][]int{{1, 1, 1}, {4}, {1, 1}, {4}, {1, 1, 1}} {
		var reqs []*request
		var imgs [][]float32
		items := 0
		for _, n := range batch {
			img := randomImage(rng, n)
			imgs = append(imgs, img)
			reqs = append(reqs, &request{model: in.model, items: n, inputs: [][]float32{img}, done: make(chan *reply, 1)})
			items += n
		}
		if _, err := in.run(reqs, items); err != nil {
			t.Fatal(err)
		}
		for k, r := range reqs {
			rep := <-r.done
			for item := range batch[k] {
				_, want := reluReference(imgs[k][item*row : (item+1)*row])
				pooled := len(want)
				compareFloats(t, "pooled", rep.outputs[1][item*pooled:(item+1)*pooled], want)
			}
		}
		if items < 4 {
			for i, v := range in.staging[4]["image"].Data[items*row:] {
				if v != 0 {
					t.Fatalf("batch %v: padding value %d is %g, want 0", batch, i, v)
				}
			}
		}
	}
}
