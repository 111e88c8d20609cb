package host

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/clhost/clhost/model"
)

// TestDefineDefaultWarning: a Define whose param the layer lacks while its default is
// used is logged once per define with the layers that lack the param, naming the nearest attribute the
// layer carries, and both the engine (run) and CustomInstances (validate -m) see it.
func TestDefineDefaultWarning(t *testing.T) {
	ctParallel(t)
	fsys := fstest.MapFS{
		"cfg/s2d.xml": {Data: []byte(`<CustomLayer name="Scale2" type="SimpleGPU" version="1">
  <Kernel entry="scale2">
    <Source filename="scale2.cl"/>
    <Define name="BLOCK" type="int" param="blocksize" default="2"/>
  </Kernel>
  <Buffers>
    <Tensor arg-index="0" type="input" port-index="0"/>
    <Tensor arg-index="1" type="output" port-index="0"/>
  </Buffers>
</CustomLayer>
`)},
		"cfg/scale2.cl": {Data: []byte("__kernel void scale2(const __global float* in, __global float* out)\n{\n    out[get_global_id(0)] = BLOCK * in[get_global_id(0)];\n}\n")},
	}
	opts := Options{NoGlobalConfig: true, ConfigFS: []ConfigFile{{FS: fsys, Path: "cfg/s2d.xml"}}}
	b := model.NewBuilder("s2d")
	x := b.Input("x", model.Float32, 1, 3, 2, 2)
	y := b.Tensor("y", model.Float32, 1, 3, 2, 2)
	z := b.Tensor("z", model.Float32, 1, 3, 2, 2)
	b.LayerOutputs("Scale2", "s2d1", []string{x}, []string{y}, model.IntAttr("block_size", 4))
	b.LayerOutputs("Scale2", "s2d2", []string{y}, []string{z}, model.IntAttr("block_size", 4))
	b.Output(z)
	m := ctBuild(t, b)

	want := func(layer string) string {
		return `layer "` + layer + `" (Scale2): Define "BLOCK" (cfg/s2d.xml:4): param "blocksize" is not an attribute of the layer; the default 2 is used (did you mean "block_size"?)`
	}
	// Compiling the model twice on one engine must not repeat the warnings.
	e, log := ctEngine(t, opts)
	for i := 0; i < 2; i++ {
		n, err := e.Compile(m)
		if err != nil {
			t.Fatalf("Compile %d: %v\nlog:\n%s", i, err, log)
		}
		n.Close()
	}
	// One line for both layers, not one per layer.
	grouped := `layers "s2d1", "s2d2" (Scale2): Define "BLOCK" (cfg/s2d.xml:4): param "blocksize" is not an attribute of the layer; the default 2 is used (did you mean "block_size"?)`
	if c := strings.Count(log.String(), "clhost: warning: "+grouped+"\n"); c != 1 || strings.Count(log.String(), "warning:") != 1 {
		t.Errorf("the log has the grouped warning %d times, want once and no other warning:\n%s", c, log)
	}

	reg, err := LoadConfigs(opts)
	if err != nil {
		t.Fatal(err)
	}
	insts, err := CustomInstances(m, reg)
	if err != nil {
		t.Fatal(err)
	}
	for i, ci := range insts {
		if ci.Err != nil || len(ci.Program.Warnings) != 1 || ci.Program.Warnings[0].String() != want(ci.Layer) {
			t.Errorf("instance %d (%s): err %v, warnings %q", i, ci.Layer, ci.Err, ci.Program.Warnings)
		}
	}
}
