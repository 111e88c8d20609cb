package host

import (
	"slices"
	"strings"
	"testing"

	"github.com/clhost/clhost/customlayer"
	"github.com/clhost/clhost/jit"
	"github.com/clhost/clhost/model"
)

// TestSingleLayerModel: the model of one ScaleShift instance takes input0, binds the
// Data blobs scale and shift as constants by name, gives output0, and carries the
// parameters as attributes of their kinds; a blob left out is an error naming it.
func TestSingleLayerModel(t *testing.T) {
	reg, err := LoadConfigs(Options{Configs: []string{"testdata/custom/data.xml"}, NoGlobalConfig: true})
	if err != nil {
		t.Fatal(err)
	}
	layer, _ := reg.Lookup("ScaleShift")
	inst := jit.Instance{Name: "ss",
		Inputs:  []jit.Tensor{{Shape: []int{1, 2, 3, 3}, Format: customlayer.ANY}},
		Outputs: []jit.Tensor{{Shape: []int{1, 2, 3, 3}, Format: customlayer.ANY}},
		Params:  jit.ParamMap{"k": jit.Int(3), "w": jit.Floats(0.5, 2)}}
	blobs := map[string]*Tensor{"scale": {Shape: []int{2}, Data: []float32{1, 2}}, "shift": {Shape: []int{2}, Data: []float32{0, 1}}}
	m, err := SingleLayerModel(layer, inst, blobs)
	if err != nil {
		t.Fatal(err)
	}
	l := m.Layers[0]
	if len(m.Layers) != 1 || l.Type != "ScaleShift" || l.Name != "ss" ||
		!slices.Equal(l.Inputs, []string{"input0", "scale", "shift"}) || !slices.Equal(m.Outputs, []string{"output0"}) {
		t.Fatalf("model %+v", m)
	}
	if s := m.Tensor("scale"); s == nil || !s.IsConst() {
		t.Errorf("scale is not a constant: %+v", s)
	}
	if len(l.Attrs) != 2 || l.Attrs[0].Name != "k" || l.Attrs[0].Kind != model.AttrInt || l.Attrs[0].Int != 3 ||
		l.Attrs[1].Name != "w" || !slices.Equal(l.Attrs[1].Floats, []float32{0.5, 2}) {
		t.Errorf("attributes %+v", l.Attrs)
	}
	delete(blobs, "shift")
	if _, err := SingleLayerModel(layer, inst, blobs); err == nil || !strings.Contains(err.Error(), `Data "shift"`) {
		t.Errorf("without shift: %v", err)
	}
}
