package openvino

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// chainIR is a chain of n ReLUs from a Parameter to a Result, its layers written in the
// reverse of their order, as an IR's ids and layers may come in any order.
func chainIR(n int) string {
	port := `<port id="%d" precision="FP32"><dim>1</dim><dim>4</dim></port>`
	layers := []string{`<layer id="0" name="x" type="Parameter" version="opset1"><output>` + fmt.Sprintf(port, 0) + `</output></layer>`}
	var edges []string
	for i := 1; i <= n; i++ {
		layers = append(layers, fmt.Sprintf(`<layer id="%d" name="r%d" type="ReLU" version="opset1"><input>`+port+`</input><output>`+port+`</output></layer>`, i, i, 0, 1))
		edges = append(edges, fmt.Sprintf(`<edge from-layer="%d" from-port="%d" to-layer="%d" to-port="0"/>`, i-1, min(i-1, 1), i))
	}
	layers = append(layers, fmt.Sprintf(`<layer id="%d" name="y" type="Result" version="opset1"><input>`+port+`</input></layer>`, n+1, 0))
	edges = append(edges, fmt.Sprintf(`<edge from-layer="%d" from-port="1" to-layer="%d" to-port="0"/>`, n, n+1))
	slices.Reverse(layers)
	return `<net name="chain" version="11"><layers>` + strings.Join(layers, "\n") + `</layers><edges>` + strings.Join(edges, "\n") + `</edges></net>`
}

// TestIROrderBackwards: a long chain written backwards is ordered in time linear in its
// layers (passes over the file took minutes at 30,000 layers), and each layer follows
// the one it reads.
func TestIROrderBackwards(t *testing.T) {
	const n = 30000
	start := time.Now()
	m, err := Options{}.Decode([]byte(chainIR(n)), nil, "chain.xml")
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("reading %d layers took %v", n, d)
	}
	if len(m.Layers) != n || m.Layers[0].Name != "r1" || m.Layers[n-1].Name != fmt.Sprintf("r%d", n) {
		t.Fatalf("%d layers, first %q, last %q", len(m.Layers), m.Layers[0].Name, m.Layers[len(m.Layers)-1].Name)
	}
}
