package host

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/clhost/clhost/tensorio"
)

// externalMain is a program of another module: it may import only the public packages,
// as a user's program would. It loads a model with a custom layer, compiles it with the
// sample's configuration and kernel, infers on an input read from a .npy file and prints
// every output value.
const externalMain = `package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/clhost/clhost/customlayer"
	"github.com/clhost/clhost/host"
	"github.com/clhost/clhost/tensorio"
)

func main() {
	dev := flag.String("d", "cpu", "device")
	config := flag.String("c", "", "custom-layer configuration")
	in := flag.String("i", "", "input .npy file")
	flag.Parse()
	if err := run(*dev, *config, *in, flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, "external:", err)
		os.Exit(1)
	}
}

func run(dev, config, in, path string) error {
	layers, err := customlayer.Load(config)
	if err != nil {
		return err
	}
	for _, l := range layers {
		fmt.Println("config layer:", l.Name)
	}
	m, err := host.LoadModel(path)
	if err != nil {
		return err
	}
	e, err := host.NewEngine(host.Options{Device: dev, Configs: []string{config}})
	if err != nil {
		return err
	}
	defer e.Close()
	n, err := e.Compile(m)
	if err != nil {
		return err
	}
	defer n.Close()
	fmt.Println("custom layers:", n.CustomLayers())
	a, err := tensorio.ReadFile(in)
	if err != nil {
		return err
	}
	out, err := n.Infer(context.Background(), map[string]*host.Tensor{m.Inputs[0]: {Shape: a.Shape, Data: a.Data}})
	if err != nil {
		return err
	}
	for _, v := range out[m.Outputs[0]].Data {
		fmt.Printf("y %.9g\n", v)
	}
	return nil
}
`

// TestExternalModule builds and runs a program in a module of its own that requires
// clhost through a replace directive, so it fails when a package a user needs to load a
// model with a custom layer and infer is internal, or the public API cannot do it. Its
// output must match the same model inferred here, and leaky ReLU computed directly.
func TestExternalModule(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build the external module: %v", err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	modelPath := filepath.Join(root, "host", "testdata", "leaky_relu.json") // one ReLU layer, negative_slope 0.1
	config := filepath.Join(root, "samples", "custom_relu", "custom_layer_example.xml")

	dir := t.TempDir()
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	// clhost's own requirements are copied in, so the external module's go.mod is
	// complete and go never walks the module graph below them: npyio's go.mod predates
	// graph pruning, and walking it needs go.mod files that a fresh module cache, filled
	// by building clhost alone, does not hold.
	rootMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	gomod := fmt.Sprintf("module example.com/external\n\ngo 1.24.0\n\nrequire github.com/clhost/clhost v0.0.0\n\n%s\nreplace github.com/clhost/clhost => %s\n", requireBlocks(string(rootMod)), root)
	writeFile(t, dir, "go.mod", gomod)
	writeFile(t, dir, "go.sum", string(sum))
	writeFile(t, dir, "main.go", externalMain)

	x := &Tensor{Shape: []int{1, 2, 3, 4}, Data: make([]float32, 24)}
	for i := range x.Data {
		x.Data[i] = float32(i-12) / 4
	}
	input := filepath.Join(dir, "x.npy")
	if err := tensorio.WriteFile(input, x.Shape, x.Data); err != nil {
		t.Fatal(err)
	}

	// The module cache and build cache are the caller's and the proxy is off, so nothing
	// is downloaded and the go.mod written above must be complete as it stands.
	cmd := exec.Command(goTool, "run", ".", "-d", testDeviceSpec(), "-c", config, "-i", input, modelPath)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "GOPROXY=off", "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("go run in the external module: %v\n%s", err, stderr.Bytes())
	}
	var got []float64
	for _, line := range strings.Split(string(stdout), "\n") {
		if v, ok := strings.CutPrefix(line, "y "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("output line %q: %v", line, err)
			}
			got = append(got, f)
		}
	}
	if !strings.Contains(string(stdout), "config layer: ReLU") || !strings.Contains(string(stdout), "custom layers: [relu (ReLU)]") {
		t.Errorf("the external program did not report the sample's custom layer:\n%s", stdout)
	}

	m, err := LoadModel(modelPath)
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngine(Options{Device: testDeviceSpec(), Configs: []string{config}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	n, err := e.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	out, err := n.Infer(context.Background(), map[string]*Tensor{"x": x})
	if err != nil {
		t.Fatal(err)
	}
	want := out["y"].Data
	if len(got) != len(want) {
		t.Fatalf("the external program printed %d values, want %d:\n%s", len(got), len(want), stdout)
	}
	const tol = 1e-5
	for i, w := range want {
		ref := float64(x.Data[i])
		if ref < 0 {
			ref *= 0.1
		}
		if math.Abs(got[i]-float64(w)) > tol || math.Abs(got[i]-ref) > tol {
			t.Errorf("y[%d]: external %g, in-process %g, leaky ReLU %g (tolerance %g)", i, got[i], w, ref, tol)
		}
	}
}

// requireBlocks returns the require directives of a go.mod file, one block or line each.
func requireBlocks(gomod string) string {
	var b strings.Builder
	in := false
	for _, line := range strings.Split(gomod, "\n") {
		switch {
		case strings.HasPrefix(line, "require ("):
			in = true
		case strings.HasPrefix(line, "require "):
			b.WriteString(line + "\n")
			continue
		}
		if in {
			b.WriteString(line + "\n")
			if strings.TrimSpace(line) == ")" {
				in = false
			}
		}
	}
	return b.String()
}
