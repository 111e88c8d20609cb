package host

import (
	"context"
	"math"
	"math/rand"
	"testing"

	"github.com/clhost/clhost/model"
)

// TestInputStaging: input data packed in the network's own pinned buffer crosses from
// there and gives the results of the same data given elsewhere, also after other data
// was copied over it; a network without pinned buffers has none to give.
func TestInputStaging(t *testing.T) {
	shape := []int{2, 3, 300, 300} // 2.1 MiB: several copying goroutines
	b := model.NewBuilder("staging")
	x := b.Input("x", model.Float32, shape...)
	b.Output(b.Layer("Sigmoid", "s", []string{x}))
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	direct := newTestEngine(t, Options{NoGlobalConfig: true})
	dn, err := direct.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	if got := dn.InputStaging("x"); (got != nil) != direct.device.IsGPU() {
		t.Fatalf("Pinned Auto on a %v device: staging of %d values", direct.device.Type, len(got))
	}
	e := newTestEngine(t, Options{NoGlobalConfig: true, Pinned: On})
	n, err := e.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	st := n.InputStaging("x")
	if len(st) != elements(shape) || n.InputStaging("y") != nil {
		t.Fatalf("staging of %d values for %d, of an unknown input %v", len(st), elements(shape), n.InputStaging("y") != nil)
	}
	rng := rand.New(rand.NewSource(6))
	for pass := range 3 {
		in := randomTensor(rng, shape...)
		want, err := dn.Infer(context.Background(), map[string]*Tensor{"x": in})
		if err != nil {
			t.Fatal(err)
		}
		given := in
		if pass != 1 { // pass 1 copies its data over the staged values
			copy(st, in.Data)
			given = &Tensor{Shape: shape, Data: st}
		}
		got, err := n.Infer(context.Background(), map[string]*Tensor{"x": given})
		if err != nil {
			t.Fatal(err)
		}
		for j, v := range got["s"].Data {
			if math.Float32bits(v) != math.Float32bits(want["s"].Data[j]) {
				t.Fatalf("pass %d: s[%d] = %v from the staging buffer, %v directly", pass, j, v, want["s"].Data[j])
			}
		}
	}
}
