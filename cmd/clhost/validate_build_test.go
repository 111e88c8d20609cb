package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateBuilds: validate compiles each layer and reports a compile error at the
// user's file:line, an entry the program lacks (with the kernels it has), an argument
// count unlike the Buffers and a kernel beyond the device's limits; what it checked is
// listed.
func TestValidateBuilds(t *testing.T) {
	buffers := `<Buffers><Tensor arg-index="0" type="input" port-index="0"/><Tensor arg-index="1" type="output" port-index="0"/></Buffers>`
	dir := writeConfig(t, map[string]string{
		"typo.cl":  "__kernel void k(__global const float* a, __global float* b)\n{\n    b[0] = a[0] * undeclared_factor;\n}\n",
		"three.cl": "__kernel void three(__global const float* a, __global float* b, __global float* c) { b[0] = a[0]; }\n",
		"big.cl":   "__kernel void big(__global const float* a, __global float* b)\n{\n    __local float t[1 << 20];\n    t[get_local_id(0)] = a[0];\n    b[0] = t[0];\n}\n",
		"limits.xml": `<CustomLayers>
<CustomLayer name="BigLocal" type="SimpleGPU" version="1"><Kernel entry="big"><Source filename="big.cl"/></Kernel>` + buffers + `</CustomLayer>
<CustomLayer name="BigGroup" type="SimpleGPU" version="1"><Kernel entry="three"><Source filename="three.cl"/></Kernel><Buffers><Tensor arg-index="0" type="input" port-index="0"/><Tensor arg-index="1" type="output" port-index="0"/><Tensor arg-index="2" type="output" port-index="0"/></Buffers><WorkSizes global="B*F*Y*X*64" local="B*F*Y*X*64"/></CustomLayer>
</CustomLayers>`,
		"typo.xml": `<CustomLayer name="Typo" type="SimpleGPU" version="1"><Kernel entry="k"><Source filename="typo.cl"/></Kernel>` + buffers + `</CustomLayer>`,
		"kernels.xml": `<CustomLayers>
<CustomLayer name="ArgCount" type="SimpleGPU" version="1"><Kernel entry="three"><Source filename="three.cl"/></Kernel>` + buffers + `</CustomLayer>
<CustomLayer name="WrongEntry" type="SimpleGPU" version="1"><Kernel entry="two"><Source filename="three.cl"/></Kernel>` + buffers + `</CustomLayer>
</CustomLayers>`,
	})
	for _, c := range []struct {
		file string
		want []string
	}{
		{"typo.xml", []string{"1 problem:", `layer type "Typo" (` + filepath.Join(dir, "typo.xml") + `:1): build failed on `, filepath.Join(dir, "typo.cl") + ":3:", "undeclared_factor"}},
		{"kernels.xml", []string{"2 problems:",
			`layer type "ArgCount" (` + filepath.Join(dir, "kernels.xml") + `:2): kernel "three" takes 3 arguments but the configuration declares 2 buffers`,
			`layer type "WrongEntry" (` + filepath.Join(dir, "kernels.xml") + `:3): entry "two" is not a kernel of the program (it has three)`}},
		// What the device cannot run: more __local memory than it has, a work-group of
		// 262,144 work-items.
		{"limits.xml", []string{"2 problems:",
			`layer type "BigLocal" (` + filepath.Join(dir, "limits.xml") + `:2): kernel "big" uses 4,194,304 bytes of __local memory per work-group, more than the device has`,
			`layer type "BigGroup" (` + filepath.Join(dir, "limits.xml") + `:3): local work size [262144] is 262144 work-items per group, more than the kernel can run with on this device`}},
	} {
		var out, errOut bytes.Buffer
		err := runValidate([]string{"-d", "cpu", "-c", filepath.Join(dir, c.file)}, &out, &errOut)
		if err == nil {
			t.Errorf("%s: validate passed:\n%s", c.file, out.String())
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: the error lacks %q:\n%v", c.file, w, err)
			}
		}
		if !strings.Contains(out.String(), "checks run:\n") || !strings.Contains(out.String(), "each layer with every tensor 1x16x16x16 and its defines' defaults; entry and argument count against the Buffers, the device's limits: 0 of") {
			t.Errorf("%s: the checks that ran are not listed:\n%s", c.file, out.String())
		}
	}
}

// TestValidateModel: with -m, validate checks the model's custom layers against its
// shapes and attributes: a Define's missing parameter (with the XML line and the layer's
// attributes) and a near-miss type name are reported without running anything; the
// sample passes, built with the model's shapes.
func TestValidateModel(t *testing.T) {
	kernel, err := filepath.Abs(filepath.Join(sampleDir, "hardswish.cl"))
	if err != nil {
		t.Fatal(err)
	}
	layer := func(name, betaParam string) string {
		return `<CustomLayer name="` + name + `" type="SimpleGPU" version="1">
  <Kernel entry="hardswish">
    <Source filename="` + kernel + `"/>
    <Define name="ALPHA" type="float" param="alpha"/>
    <Define name="BETA" type="float" param="` + betaParam + `"/>
  </Kernel>
  <Buffers><Tensor arg-index="0" type="input" port-index="0"/><Tensor arg-index="1" type="output" port-index="0"/></Buffers>
  <WorkSizes global="X,Y,B*F"/>
</CustomLayer>`
	}
	dir := writeConfig(t, map[string]string{"param.xml": layer("HardSwishX", "gamma"), "case.xml": layer("HardSwishx", "beta")})
	model := filepath.Join(sampleDir, "model.onnx")
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--no-build", "-c", filepath.Join(dir, "param.xml")}, []string{
			`layer "hs1" (type "HardSwishX"): Define "BETA" (` + filepath.Join(dir, "param.xml") + `:5): the layer has no parameter "gamma" and the define has no default; the layer's parameters: alpha (float), beta (float), domain (string)`}},
		{[]string{"--no-build", "-c", filepath.Join(dir, "case.xml")}, []string{
			`no implementation for layer type "HardSwishX" (layer "hs1"): did you mean "HardSwishx" (` + filepath.Join(dir, "case.xml") + `:1)?`}},
	} {
		var out, errOut bytes.Buffer
		err := runValidate(append(c.args, "-m", model), &out, &errOut)
		if err == nil {
			t.Errorf("%v: validate passed:\n%s", c.args, out.String())
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: the error lacks %q:\n%v", c.args, w, err)
			}
		}
	}
	var out, errOut bytes.Buffer
	if err := runValidate([]string{"-d", "cpu", "-c", filepath.Join(sampleDir, "hardswish.xml"), "-m", model}, &out, &errOut); err != nil {
		t.Fatalf("the sample fails validation: %v\n%s", err, out.String())
	}
	if want := "1 custom layer(s) against the model's shapes and attributes (parameters, work sizes, formats): 1 of 1 ok; built with them: 1 of 1 ok"; !strings.Contains(out.String(), want) {
		t.Errorf("stdout lacks %q:\n%s", want, out.String())
	}
}
