package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clhost/clhost/model"
)

func TestInspectTable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "small.clm")
	if err := model.Save(smallConvPool(t), path); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := inspect(&out, path, false, nil); err != nil {
		t.Fatal(err)
	}
	// Column widths: the widest cell of each column plus two spaces. The inputs column is
	// "data[1x3x8x8] conv1.weight[4x3x2x2] conv1.bias[4]", 13+1+21+1+13 = 49 wide.
	row := func(cells ...string) string {
		return fmt.Sprintf("%-7s%-7s%-9s%-51s%-16s%-8s%s", cells[0], cells[1], cells[2], cells[3], cells[4], cells[5], cells[6])
	}
	want := strings.Join([]string{
		fmt.Sprintf("model \"small\" (%s)", path),
		"inputs:",
		"  data  float32  1x3x8x8",
		"outputs:",
		"  pool1  float32  1x4x2x2",
		"",
		row("level", "layer", "type", "inputs", "outputs", "params", "attributes"),
		row("0", "conv1", "Conv", "data[1x3x8x8] conv1.weight[4x3x2x2] conv1.bias[4]", "conv1[1x4x4x4]", "52", "strides=2,2"),
		row("1", "pool1", "MaxPool", "conv1[1x4x4x4]", "pool1[1x4x2x2]", "0", "kernel_shape=2,2 strides=2,2"),
		"",
		"2 layers in 2 levels; 52 parameters (208 B) in 2 constant tensors",
		"",
	}, "\n")
	if out.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestInspectDot(t *testing.T) {
	path := filepath.Join(t.TempDir(), "small.json")
	if err := model.SaveJSON(smallConvPool(t), path); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := inspect(&out, path, true, nil); err != nil {
		t.Fatal(err)
	}
	want := `digraph "small" {
  node [shape=box, style=rounded, fontname="Helvetica"];
  edge [fontname="Helvetica", fontsize=10];
  "input:data" [shape=ellipse, label="data\n1x3x8x8"];
  "layer:0" [label="conv1\nConv\n52 params"];
  "layer:1" [label="pool1\nMaxPool"];
  "input:data" -> "layer:0" [label="data\n1x3x8x8"];
  "layer:0" -> "layer:1" [label="conv1\n1x4x4x4"];
  "output:pool1" [shape=ellipse, style=bold, label="pool1\n1x4x2x2"];
  "layer:1" -> "output:pool1" [label="pool1\n1x4x2x2"];
}
`
	if out.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", out.String(), want)
	}
	dot, err := exec.LookPath("dot")
	if err != nil {
		t.Log("graphviz not installed; the graph's syntax is not checked by dot")
		return
	}
	cmd := exec.Command(dot, "-Tsvg")
	cmd.Stdin = &out
	if msg, err := cmd.CombinedOutput(); err != nil || !bytes.Contains(msg, []byte("<svg")) {
		t.Fatalf("dot refused the graph: %v\n%s", err, msg)
	}
}

func TestDotQuoting(t *testing.T) {
	if got := dotQuote(`a"b\c`); got != `"a\"b\\c"` {
		t.Errorf("dotQuote = %s", got)
	}
	if got := dotLabel(`x"`, "1x2"); got != `"x\"\n1x2"` {
		t.Errorf("dotLabel = %s", got)
	}
}

func TestInspectCustomLayerWithoutShape(t *testing.T) {
	b := model.NewBuilder("custom")
	x := b.Input("x", model.Float32, 2, 2)
	b.Output(b.Layer("GRN", "grn", []string{x}, model.FloatAttr("bias", 0.5)))
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "custom.clm")
	if err := model.Save(m, path); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = inspect(&out, path, false, nil)
	if err == nil || !strings.Contains(err.Error(), `shape inference: model "custom": layer "grn" (GRN): output "grn" has no declared shape`) {
		t.Fatalf("got %v", err)
	}
	if !strings.Contains(out.String(), "grn[?]") || !strings.Contains(out.String(), "bias=0.5") {
		t.Fatalf("the table was not printed with the unknown shape:\n%s", out.String())
	}
}

func TestInspectExitCodes(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.clm")
	if err := model.Save(smallConvPool(t), path); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "g.clm")
	os.WriteFile(garbage, []byte("garbage, not a model"), 0o644)
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"inspect"}, 2},
		{[]string{"inspect", "-m", path, "extra"}, 2},
		{[]string{"inspect", "-m", garbage}, 1},
		{[]string{"inspect", "-m", filepath.Join(dir, "none.clm")}, 1},
	} {
		if code := runMain(c.args); code != c.code {
			t.Errorf("%v: exit %d, want %d", c.args, code, c.code)
		}
	}
}

func TestInspectNoTrailingBlanks(t *testing.T) {
	b := model.NewBuilder("plain")
	x := b.Input("x", model.Float32, 2)
	b.Output(b.Layer("Relu", "r", []string{x}))
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "plain.clm")
	if err := model.Save(m, path); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := inspect(&out, path, false, nil); err != nil {
		t.Fatal(err)
	}
	want := "0      r      Relu  x[2]    r[2]     0\n"
	if !strings.Contains(out.String(), want) {
		t.Fatalf("got:\n%q\nwant a line %q", out.String(), want)
	}
}
