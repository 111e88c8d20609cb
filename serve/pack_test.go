package serve

import (
	"math/rand"
	"slices"
	"testing"
)

// TestConcat: values copied in shares by several goroutines (above 1 MiB) land where
// one copy after another puts them.
func TestConcat(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	for _, lens := range [][]int{{3, 0, 5}, {150528, 150528, 150528}, {1, 300000, 7, 200001, 0, 99999}} {
		var srcs [][]float32
		var want []float32
		for _, n := range lens {
			s := make([]float32, n)
			for i := range s {
				s[i] = rng.Float32()
			}
			srcs = append(srcs, s)
			want = append(want, s...)
		}
		dst := make([]float32, len(want)+9)
		for i := range dst {
			dst[i] = -1
		}
		if n := concat(dst, srcs); n != len(want) {
			t.Errorf("lengths %v: copied %d values, want %d", lens, n, len(want))
		}
		if !slices.Equal(dst[:len(want)], want) {
			t.Errorf("lengths %v: the values differ from the sources one after another", lens)
		}
		for i, v := range dst[len(want):] {
			if v != -1 {
				t.Errorf("lengths %v: value %d past the sources written", lens, len(want)+i)
			}
		}
	}
}

// TestPaddingRows: the rows of a padded inference past its batch's items are zero,
// whatever an earlier, larger batch left there, and every request gets its own
// image's result.
func TestPaddingRows(t *testing.T) {
	ts := startServer(t, []Source{reluSource()}, 1, Options{MaxBatch: 4, BatchSizes: []int{1, 4}})
	in := ts.models["relu"].instances[0]
	in.mu.Lock()
	in.est[1], in.est[4] = 1, 1.5 // 2 and 3 items run as one padded inference of 4
	in.mu.Unlock()
	row := imgC * imgH * imgW
	rng := rand.New(rand.NewSource(9))
	for _, items := range []int{3, 2, 3} {
		var reqs []*request
		var imgs [][]float32
		for range items {
			img := randomImage(rng, 1)
			imgs = append(imgs, img)
			reqs = append(reqs, &request{model: in.model, items: 1, inputs: [][]float32{img}, done: make(chan *reply, 1)})
		}
		if _, err := in.run(reqs, items); err != nil {
			t.Fatal(err)
		}
		stage := in.staging[4]["image"].Data
		for i, v := range stage[items*row:] {
			if v != 0 {
				t.Fatalf("batch of %d: padding value %d is %g, want 0", items, i, v)
			}
		}
		for k, r := range reqs {
			rep := <-r.done
			_, want := reluReference(imgs[k])
			compareFloats(t, "pooled", rep.outputs[1], want)
		}
	}
}
