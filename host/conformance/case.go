package conformance

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strings"

	"github.com/clhost/clhost/host"
	"github.com/clhost/clhost/internal/onnx"
	"github.com/clhost/clhost/model"
)

// ONNX's backend tests compare with numpy.testing.assert_allclose at these tolerances:
// |got − want| ≤ atol + rtol·|want|, NaN matching NaN.
const (
	rtol = 1e-3
	atol = 1e-7
)

// testDataSet is one test_data_set_N folder: inputs and expected outputs.
type testDataSet struct {
	dir     string
	inputs  []model.Tensor
	outputs []model.Tensor
}

// RunCase runs every data set of the test folder dir on an engine opened with opt and
// gives the verdict; a panic anywhere in it is a crash. Failures are verdicts, not
// errors: the Message says what went wrong.
func RunCase(dir string, opt host.Options) (r Result) {
	r = Result{Test: dir}
	defer func() {
		if p := recover(); p != nil {
			r.Verdict = Crash
			r.Message = fmt.Sprintf("panic: %v (%s)", p, firstLine(string(debug.Stack())))
		}
	}()
	data, err := os.ReadFile(filepath.Join(dir, "model.onnx"))
	if err != nil {
		r.Verdict, r.Message = Refused, err.Error()
		return r
	}
	sum, err := onnx.Inspect(data)
	if err != nil {
		r.Verdict, r.Message = Refused, err.Error()
		return r
	}
	r.Ops = sum.OpTypes
	sets, err := readTestDataSets(dir)
	if err != nil {
		r.Verdict, r.Message = Refused, err.Error()
		return r
	}
	r.Float = isFloatTest(sum, sets)
	e, err := host.NewEngine(opt)
	if err != nil {
		r.Verdict, r.Message = Crash, "opening the device: "+err.Error()
		return r
	}
	defer e.Close()
	for _, s := range sets {
		verdict, msg := runTestDataSet(e, data, dir, sum, s)
		if verdict != Pass {
			r.Verdict, r.Message = verdict, msg
			if len(sets) > 1 {
				r.Message = filepath.Base(s.dir) + ": " + msg
			}
			return r
		}
	}
	r.Verdict = Pass
	return r
}

// isFloatTest says whether every input the test feeds at run time and every output is a
// floating-point tensor (load-time inputs are shapes and attributes, not data).
func isFloatTest(sum *onnx.Summary, sets []testDataSet) bool {
	for _, s := range sets {
		for i, t := range s.inputs {
			name := t.Name
			if name == "" && i < len(sum.Inputs) {
				name = sum.Inputs[i]
			}
			if t.Type != model.Float32 && !slices.Contains(sum.LoadTimeInputs, name) {
				return false
			}
		}
		for _, t := range s.outputs {
			if t.Type != model.Float32 {
				return false
			}
		}
	}
	return true
}

// runTestDataSet loads the model with the set's load-time inputs as constants, runs it
// with the other inputs and compares every output.
func runTestDataSet(e *host.Engine, data []byte, dir string, sum *onnx.Summary, s testDataSet) (string, string) {
	byName := map[string]model.Tensor{}
	for i, t := range s.inputs {
		name := t.Name
		if name == "" && i < len(sum.Inputs) {
			name = sum.Inputs[i]
		}
		byName[name] = t
	}
	// Inputs whose values decide shapes are constants; the others give their shapes.
	opt := onnx.Options{Constants: map[string]model.Tensor{}, InputShapes: map[string][]int{}}
	for _, name := range sum.Inputs {
		t, ok := byName[name]
		if !ok {
			return Refused, fmt.Sprintf("input %q has no data in %s", name, s.dir)
		}
		if want, ok := sum.Types[name]; ok && want != t.Type {
			return Refused, fmt.Sprintf("input %q: the test data is %s, the model declares %s", name, t.Type, want)
		}
		if slices.Contains(sum.LoadTimeInputs, name) {
			opt.Constants[name] = t
		} else {
			opt.InputShapes[name] = slices.Clone(t.Shape)
		}
	}
	for i, want := range s.outputs {
		name := want.Name
		if name == "" && i < len(sum.Outputs) {
			name = sum.Outputs[i]
		}
		if typ, ok := sum.Types[name]; ok && typ != want.Type {
			return Refused, fmt.Sprintf("output %q: the expected data is %s, the model declares %s", name, want.Type, typ)
		}
	}
	m, err := opt.Decode(data, dir, filepath.Join(dir, "model.onnx"))
	if err != nil {
		return Refused, oneLine(err)
	}
	n, err := e.Compile(m)
	if err != nil {
		return Refused, oneLine(err)
	}
	feed := map[string]*host.Tensor{}
	for _, in := range n.Inputs() {
		t, ok := byName[in.Name]
		if !ok {
			return Refused, fmt.Sprintf("input %q has no data in %s", in.Name, s.dir)
		}
		v, err := tensorFloats(&t)
		if err != nil {
			return Refused, fmt.Sprintf("input %q: %v", in.Name, err)
		}
		feed[in.Name] = &host.Tensor{Shape: slices.Clone(t.Shape), Data: v}
	}
	got, err := n.Infer(context.Background(), feed)
	if err != nil {
		return Crash, "inference: " + oneLine(err)
	}
	for i, want := range s.outputs {
		name := want.Name
		if name == "" && i < len(m.Outputs) {
			name = m.Outputs[i]
		}
		g, ok := got[name]
		if !ok {
			return Wrong, fmt.Sprintf("output %q was not produced", name)
		}
		if !slices.Equal(g.Shape, want.Shape) {
			return Wrong, fmt.Sprintf("output %q has shape %v, want %v", name, g.Shape, want.Shape)
		}
		w, err := tensorFloats(&want)
		if err != nil {
			return Refused, fmt.Sprintf("expected output %q: %v", name, err)
		}
		if msg := compareOutputs(g.Data, w); msg != "" {
			return Wrong, fmt.Sprintf("output %q: %s", name, msg)
		}
	}
	return Pass, ""
}

// compareOutputs checks got against want at ONNX's tolerances and describes the first
// and worst differences, or returns "".
func compareOutputs(got, want []float32) string {
	bad, worst := 0, -1
	worstDiff := 0.0
	for i := range want {
		g, w := float64(got[i]), float64(want[i])
		switch {
		case math.IsNaN(w) || math.IsNaN(g):
			if math.IsNaN(w) && math.IsNaN(g) {
				continue
			}
		case math.IsInf(w, 0) || math.IsInf(g, 0):
			if g == w {
				continue
			}
		case math.Abs(g-w) <= atol+rtol*math.Abs(w):
			continue
		}
		bad++
		if d := math.Abs(g - w); worst < 0 || d > worstDiff || math.IsNaN(d) {
			worst, worstDiff = i, d
		}
	}
	if bad == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d values differ; at %d got %v, want %v", bad, len(want), worst, got[worst], want[worst])
}

// readTestDataSets reads every test_data_set_N folder of a test, in order.
func readTestDataSets(dir string) ([]testDataSet, error) {
	matches, err := filepath.Glob(filepath.Join(dir, "test_data_set_*"))
	if err != nil {
		return nil, err
	}
	sort.Strings(matches)
	var sets []testDataSet
	for _, d := range matches {
		s := testDataSet{dir: d}
		for _, kind := range []string{"input", "output"} {
			for i := 0; ; i++ {
				b, err := os.ReadFile(filepath.Join(d, fmt.Sprintf("%s_%d.pb", kind, i)))
				if os.IsNotExist(err) {
					break
				}
				if err != nil {
					return nil, err
				}
				t, err := onnx.DecodeTensor(b)
				if err != nil {
					return nil, fmt.Errorf("%s_%d.pb: %w", kind, i, err)
				}
				if kind == "input" {
					s.inputs = append(s.inputs, t)
				} else {
					s.outputs = append(s.outputs, t)
				}
			}
		}
		sets = append(sets, s)
	}
	if len(sets) == 0 {
		return nil, fmt.Errorf("%s has no test_data_set_* folder", dir)
	}
	return sets, nil
}

// tensorFloats returns a tensor's values as float32, clhost's type for every activation.
func tensorFloats(t *model.Tensor) ([]float32, error) {
	if t.Type == model.Float32 {
		return t.Float32s()
	}
	if t.Type == model.Float16 {
		out := make([]float32, t.Elements())
		for i := range out {
			out[i] = model.HalfToFloat32(binary.LittleEndian.Uint16(t.Data[2*i:]))
		}
		return out, nil
	}
	ints, err := t.Int64s()
	if err != nil {
		return nil, err
	}
	out := make([]float32, len(ints))
	for i, v := range ints {
		out[i] = float32(v)
	}
	return out, nil
}

// oneLine keeps the first line of an error: the part that names the problem.
func oneLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}
