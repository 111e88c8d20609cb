package main

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clhost/clhost/tensorio"
)

// captureStderr runs f with os.Stderr redirected and returns what it wrote.
func captureStderr(t *testing.T, f func()) string { return capture(t, &os.Stderr, f) }

// capture runs f with *file (os.Stdout or os.Stderr) redirected to a pipe and returns
// what f wrote there.
func capture(t *testing.T, file **os.File, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := *file
	*file = w
	done := make(chan string)
	go func() {
		var b strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := r.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		done <- b.String()
	}()
	f()
	w.Close()
	*file = old
	return <-done
}

const dynamicONNX = "../../internal/onnx/testdata/dynamic.onnx"

func TestRunCLIErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "x.npy")
	if err := tensorio.WriteFile(good, []int{2, 3, 4, 4}, make([]float32, 96)); err != nil {
		t.Fatal(err)
	}
	wrong := filepath.Join(dir, "wrong.npy")
	if err := tensorio.WriteFile(wrong, []int{2, 3, 5}, make([]float32, 30)); err != nil {
		t.Fatal(err)
	}
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", "--nope"}, 2, "flag provided but not defined: -nope"},
		{[]string{"run", "-m"}, 2, "flag needs an argument: -m"},
		{[]string{"run"}, 2, "missing -m MODEL"},
		{[]string{"run", "-m", dynamicONNX, "-d", "cpu", "-i", "nosuch=" + good, "-o", dir}, 1, `"nosuch", which is not a graph input`},
		// An unnamed -i file is read before the model's input is known: no empty name.
		{[]string{"run", "-m", dynamicONNX, "-d", "cpu", "-i", filepath.Join(dir, "missing.npy"), "-o", dir}, 1, "clhost run: input: open " + filepath.Join(dir, "missing.npy")},
		{[]string{"run", "-m", dynamicONNX, "-d", "cpu", "-i", blocker, "-o", dir}, 1, "clhost run: input: " + blocker + ": "},
		{[]string{"run", "-m", dynamicONNX, "-d", "cpu", "-i", "x=" + wrong, "-o", dir}, 1, "wrong.npy"},
		{[]string{"run", "-m", dynamicONNX, "-d", "cpu", "-o", filepath.Join(blocker, "out")}, 1, "output folder"},
		{[]string{"run", "-m", filepath.Join(dir, "none.onnx"), "-d", "cpu"}, 1, "none.onnx"},
		{[]string{"run", "-m", dynamicONNX, "-d", "nosuchdevice"}, 1, `device "nosuchdevice"`},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
	}
	for _, c := range cases {
		var code int
		out := captureStderr(t, func() { code = runMain(c.args) })
		lines := strings.Split(strings.TrimSpace(out), "\n")
		last := lines[len(lines)-1]
		if code != c.code || !strings.Contains(last, c.want) {
			t.Errorf("clhost %s: exit %d, last stderr line %q; want exit %d and %q", strings.Join(c.args, " "), code, last, c.code, c.want)
		}
		if strings.Contains(out, "goroutine ") || strings.Contains(out, "panic:") {
			t.Errorf("clhost %s: stack trace on stderr:\n%s", strings.Join(c.args, " "), out)
		}
	}
}

// TestRunDynamicBatchFromInput: an ONNX model with a dynamic batch takes the batch of the
// .npy given with -i.
func TestRunDynamicBatchFromInput(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "x.npy")
	if err := tensorio.WriteFile(in, []int{3, 3, 4, 4}, make([]float32, 144)); err != nil {
		t.Fatal(err)
	}
	var code int
	errOut := captureStderr(t, func() { code = runMain([]string{"run", "-m", dynamicONNX, "-d", "cpu", "-i", in, "-o", dir}) })
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	a, err := tensorio.ReadFile(filepath.Join(dir, "y.npy"))
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Shape) != 2 || a.Shape[0] != 3 {
		t.Errorf("output shape %v, want batch 3", a.Shape)
	}
}

// idsONNX is an embedding lookup: INT64 ids [2, 3] → Gather of a [10, 4] table whose
// element k of row r is 4r + k.
const idsONNX = "../../internal/onnx/testdata/ids.onnx"

// TestRunIntegerInput: a model taking INT64 ids runs from an int64 .npy file (each output
// row the table row of its id, -1 the last), and without one on zeros, which it says.
func TestRunIntegerInput(t *testing.T) {
	dir := t.TempDir()
	ids := []int64{0, 9, 3, -1, 4, 7}
	head := "{'descr': '<i8', 'fortran_order': False, 'shape': (2, 3), }"
	head += strings.Repeat(" ", 118-len(head)) + "\n"
	npy := append([]byte("\x93NUMPY\x01\x00"), byte(len(head)), 0)
	npy = append(npy, head...)
	for _, id := range ids {
		npy = binary.LittleEndian.AppendUint64(npy, uint64(id))
	}
	in := filepath.Join(dir, "ids.npy")
	if err := os.WriteFile(in, npy, 0o644); err != nil {
		t.Fatal(err)
	}
	rows := func(args ...string) ([]float32, string) {
		var code int
		errOut := captureStderr(t, func() {
			code = runMain(append([]string{"run", "-m", idsONNX, "-d", "cpu", "-o", dir, "--quiet"}, args...))
		})
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		a, err := tensorio.ReadFile(filepath.Join(dir, "y.npy"))
		if err != nil {
			t.Fatal(err)
		}
		return a.Data, errOut
	}
	got, _ := rows("-i", in)
	for i, id := range ids {
		r := (id + 10) % 10
		for k := range 4 {
			if want := float32(4*r) + float32(k); got[4*i+k] != want {
				t.Fatalf("id %d element %d: %v, want %v", id, k, got[4*i+k], want)
			}
		}
	}
	got, errOut := rows()
	if !strings.Contains(errOut, `input "ids" [2 3]: zeros (int64`) {
		t.Errorf("stderr without -i: %q, want it to say the ids are zeros", errOut)
	}
	for i, v := range got {
		if v != float32(i%4) {
			t.Fatalf("zero ids: element %d is %v, want row 0's %d", i, v, i%4)
		}
	}
}
