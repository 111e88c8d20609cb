package onnx

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/clhost/clhost/model"
)

// Every prefix of a model is refused with an error that names the file, and nothing
// panics. conv.onnx has one opset_import and it is the file's last field, so no prefix is a
// complete model.
func TestTruncated(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "conv.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Decode(data, "testdata", "conv.onnx"); err != nil {
		t.Fatalf("whole file: %v", err)
	}
	for n := 0; n < len(data); n++ {
		_, err := Decode(data[:n], "testdata", "conv.onnx")
		if err == nil {
			t.Fatalf("prefix of %d bytes loaded", n)
		}
		if !strings.HasPrefix(err.Error(), "conv.onnx: ") {
			t.Fatalf("prefix of %d bytes: error %q does not name the file", n, err)
		}
	}
	// Prefixes of every other fixture must not panic either; some may be whole models.
	files, _ := filepath.Glob(filepath.Join("testdata", "*.onnx"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for n := 0; n < len(data); n++ {
			_, _ = Decode(data[:n], "testdata", f)
		}
	}
}

func TestGarbage(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		return b
	}
	cases := map[string]struct {
		data []byte
		want string
	}{
		"empty":         {nil, "no graph"},
		"text":          {[]byte("ir_version: 7\ngraph { }\n"), "not a readable ONNX file"},
		"png":           {[]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), "not a readable ONNX file"},
		"all ones":      {bytes.Repeat([]byte{0xff}, 64), "not a readable ONNX file"},
		"huge length":   {[]byte{0x3a, 0xff, 0xff, 0xff, 0xff, 0x0f}, "field 7"},
		"end group":     {[]byte{0x0c}, "not a readable ONNX file"},
		"field zero":    {[]byte{0x00, 0x01}, "bad field tag"},
		"zeros":         {make([]byte, 100), "not a readable ONNX file"},
		"nested graphs": {bytes.Repeat([]byte{0x3a, 0x02}, 40), "graph"},
	}
	for i := 0; i < 20; i++ {
		cases["random "+string(rune('a'+i))] = struct {
			data []byte
			want string
		}{random(1 + rng.IntN(300)), ""}
	}
	for name, c := range cases {
		_, err := Decode(c.data, "", "junk.onnx")
		if err == nil {
			t.Errorf("%s: loaded", name)
			continue
		}
		if !strings.HasPrefix(err.Error(), "junk.onnx: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q, want one naming the file and mentioning %q", name, err, c.want)
		}
	}
	if _, err := Load(filepath.Join("testdata", "missing.onnx")); err == nil || !strings.Contains(err.Error(), "missing.onnx") {
		t.Errorf("missing file: %v", err)
	}
}

// tensorPB is a TensorProto; body adds the data fields.
func tensorPB(name string, dt int, dims []int64, body pb) pb {
	b := pb{}
	for _, d := range dims {
		b = b.varint(1, uint64(d))
	}
	b = b.varint(2, uint64(dt)).str(8, name)
	return append(b, body...)
}

func addInit(t pb) func(g pb) pb   { return func(g pb) pb { return g.msg(5, t) } }
func addNode(n pb) func(g pb) pb   { return func(g pb) pb { return g.msg(1, n) } }
func addInput(v pb) func(g pb) pb  { return func(g pb) pb { return g.msg(11, v) } }
func addValue(v pb) func(g pb) pb  { return func(g pb) pb { return g.msg(13, v) } }
func addOutput(v pb) func(g pb) pb { return func(g pb) pb { return g.msg(12, v) } }

// sink reads initializer names through a custom op, so they count as used.
func sink(names ...string) func(g pb) pb {
	return func(g pb) pb {
		n := node("Sink", "sink", append([]string{"x"}, names...), []string{"s"})
		n = n.str(7, "com.example")
		return g.msg(1, n).msg(12, vinfo("s", dtFloat, 1))
	}
}

func f32raw(vs ...float32) pb { return pb{}.bytes(9, f32bytes(vs...)) }

func TestMalformed(t *testing.T) {
	good := relu1()
	cases := []struct {
		name string
		data pb
		opt  Options
		want string
	}{
		{"opset too old", onnxModel(0, good), Options{}, "opset 0 is outside the range clhost reads (1 to 21)"},
		{"opset too new", onnxModel(22, good), Options{}, "opset 22 is outside"},
		{"no default opset", pb{}.msg(7, good).msg(8, pb{}.str(1, "com.x").varint(2, 1)), Options{}, "imports no opset of the default ONNX domain"},
		{"graph as varint", pb{}.varint(7, 3), Options{}, "field 7 (graph) has varint encoding, want bytes"},
		{"node input as varint", onnxModel(13, pb{}.msg(1, pb{}.varint(1, 5))), Options{}, "graph: node 0: field 1 (input) has varint encoding"},
		{"two graphs", onnxModel(13, good).msg(7, good), Options{}, "more than one graph"},
		{"graph attribute", onnxModel(13, relu1(addNode(node("Loop", "loop", []string{"x"}, []string{"l"},
			pb{}.str(1, "body").varint(20, attrGraph).msg(6, good))))), Options{}, `node "loop" (Loop): attribute "body": type GRAPH cannot be a clhost layer attribute`},
		{"strings attribute", onnxModel(13, relu1(addNode(node("Foo", "foo", []string{"x"}, []string{"f"},
			pb{}.str(1, "names").varint(20, attrStrings).str(9, "a"))))), Options{}, `attribute "names": type STRINGS`},
		{"untyped ambiguous attribute", onnxModel(13, relu1(addNode(node("Foo", "foo", []string{"x"}, []string{"f"},
			pb{}.str(1, "a").fixed32(2, 0).varint(3, 1))))), Options{}, `attribute "a": attribute has no type`},
		{"function attribute", onnxModel(13, relu1(addNode(node("Foo", "foo", []string{"x"}, []string{"f"},
			pb{}.str(1, "a").str(21, "outer").varint(20, attrInt))))), Options{}, `refers to function attribute "outer"`},
		{"duplicate attribute", onnxModel(13, relu1(addNode(node("Foo", "foo", []string{"x"}, []string{"f"},
			intAttr("a", 1), intAttr("a", 2))))), Options{}, `attribute "a" appears twice`},
		{"string tensor", onnxModel(13, relu1(addInit(tensorPB("s", dtString, []int64{1}, pb{}.str(6, "hi"))), sink("s"))), Options{},
			`initializer "s": element type STRING is not supported`},
		{"complex tensor", onnxModel(13, relu1(addInit(tensorPB("c", dtComplex64, []int64{1}, f32raw(1, 2))), sink("c"))), Options{},
			"element type COMPLEX64 is not supported"},
		{"raw length", onnxModel(13, relu1(addInit(tensorPB("w", dtFloat, []int64{2}, pb{}.bytes(9, []byte{1, 2, 3}))), sink("w"))), Options{},
			`initializer "w": raw data holds 3 bytes, shape [2] of FLOAT needs 8`},
		{"typed count", onnxModel(13, relu1(addInit(tensorPB("w", dtFloat, []int64{2}, pb{}.fixed32(4, 0))), sink("w"))), Options{},
			"float_data holds 1 values, shape [2] needs 2"},
		{"no data", onnxModel(13, relu1(addInit(tensorPB("w", dtInt64, []int64{3}, nil)), sink("w"))), Options{},
			"int64_data holds 0 values, shape [3] needs 3"},
		{"wrong typed field", onnxModel(13, relu1(addInit(tensorPB("w", dtFloat, []int64{1}, pb{}.varint(7, 1))), sink("w"))), Options{},
			"FLOAT tensor has values in int64_data, expected float_data"},
		{"negative dim", onnxModel(13, relu1(addInit(tensorPB("w", dtFloat, []int64{-1}, nil)), sink("w"))), Options{}, "dimension 0 is -1"},
		{"huge dims", onnxModel(13, relu1(addInit(tensorPB("w", dtFloat, []int64{1 << 30, 1 << 30, 1 << 30}, nil)), sink("w"))), Options{},
			"too many elements"},
		{"raw and typed", onnxModel(13, relu1(addInit(tensorPB("w", dtFloat, []int64{1}, f32raw(1).fixed32(4, 0))), sink("w"))), Options{},
			"has both raw_data and float_data"},
		{"int8 out of range", onnxModel(13, relu1(addInit(tensorPB("w", dtInt8, []int64{1}, pb{}.varint(5, 300))), sink("w"))), Options{},
			"int32_data value 300 at index 0 is out of range for INT8"},
		{"uint64 too large", onnxModel(13, relu1(addInit(tensorPB("w", dtUint64, []int64{1}, pb{}.varint(11, math.MaxUint64))), sink("w"))), Options{},
			"out of range for UINT64"},
		{"packed floats misaligned", onnxModel(13, relu1(addInit(tensorPB("w", dtFloat, []int64{1}, pb{}.bytes(4, []byte{1, 2, 3, 4, 5}))), sink("w"))), Options{},
			"packed length 5 is not a multiple of 4"},
		{"segment", onnxModel(13, relu1(addInit(tensorPB("w", dtFloat, []int64{1}, pb{}.msg(3, pb{}.varint(1, 0)).fixed32(4, 0))), sink("w"))), Options{},
			"segmented tensors are not supported"},
		{"unnamed initializer", onnxModel(13, relu1(addInit(tensorPB("", dtFloat, []int64{1}, f32raw(1))))), Options{}, "initializer 0 has no name"},
		{"bad location", onnxModel(13, relu1(addInit(tensorPB("w", dtFloat, []int64{1}, f32raw(1).varint(14, 2))), sink("w"))), Options{},
			"unknown data_location 2"},
		{"external without location", onnxModel(13, relu1(addInit(tensorPB("w", dtFloat, []int64{1}, pb{}.varint(14, 1))), sink("w"))), Options{},
			"external data has no location"},
		{"external bad offset", onnxModel(13, relu1(addInit(tensorPB("w", dtFloat, []int64{1},
			pb{}.varint(14, 1).msg(13, pb{}.str(1, "location").str(2, "external.bin")).msg(13, pb{}.str(1, "offset").str(2, "-4")))), sink("w"))), Options{},
			`external data offset "-4" is not a non-negative integer`},
		{"absolute location", onnxModel(13, relu1(addInit(tensorPB("w", dtFloat, []int64{1},
			pb{}.varint(14, 1).msg(13, pb{}.str(1, "location").str(2, "/etc/passwd")))), sink("w"))), Options{},
			`"/etc/passwd": refusing a path outside the model's folder`},
		{"initializer clashes with node output", onnxModel(13, relu1(addInit(tensorPB("y", dtFloat, []int64{1, 2}, f32raw(1, 2))))), Options{},
			`tensor "y" is produced by both an initializer and node "relu" (Relu)`},
		{"input without shape", onnxModel(13, pb{}.msg(1, node("Relu", "relu", []string{"x"}, []string{"y"})).
			msg(11, pb{}.str(1, "x").msg(2, pb{}.msg(1, pb{}.varint(1, dtFloat)))).msg(12, vinfo("y", dtFloat))), Options{},
			`graph input "x": the model declares no shape`},
		{"input not a tensor", onnxModel(13, pb{}.msg(1, node("Relu", "relu", []string{"x"}, []string{"y"})).
			msg(11, pb{}.str(1, "x").msg(2, pb{}.msg(4, pb{}))).msg(12, vinfo("y", dtFloat))), Options{},
			`graph input "x" is not a tensor`},
		{"input string type", onnxModel(13, pb{}.msg(1, node("Relu", "relu", []string{"x"}, []string{"y"})).
			msg(11, vinfo("x", dtString, 1)).msg(12, vinfo("y", dtFloat))), Options{},
			`graph input "x": element type STRING is not supported`},
		{"symbolic spatial dim", onnxModel(13, pb{}.msg(1, node("Relu", "relu", []string{"x"}, []string{"y"})).
			msg(11, vinfo("x", dtFloat, "N", 3, "h")).msg(12, vinfo("y", dtFloat))), Options{},
			`graph input "x": dimension 2 ("h") is not fixed`},
		{"conflicting symbol", onnxModel(13, pb{}.msg(1, node("Add", "add", []string{"a", "b"}, []string{"y"})).
			msg(11, vinfo("a", dtFloat, "N", 2)).msg(11, vinfo("b", dtFloat, "N", 2)).msg(12, vinfo("y", dtFloat))),
			Options{InputShapes: map[string][]int{"a": {2, 2}, "b": {3, 2}}}, `symbol "N" is 3 here but 2 in an earlier input`},
		{"input listed twice", onnxModel(13, relu1(addInput(vinfo("x", dtFloat, 1, 2)))), Options{}, `graph input "x" is listed twice`},
		{"domain attribute clash", onnxModel(13, relu1(addNode(node("Foo", "foo", []string{"x"}, []string{"f"},
			pb{}.str(1, "domain").varint(20, attrString).str(4, "a")).str(7, "com.x")))), Options{},
			`has an attribute named "domain"`},
		{"constant string", onnxModel(13, relu1(addNode(node("Constant", "k", nil, []string{"k"},
			pb{}.str(1, "value_string").varint(20, attrString).str(4, "a"))))), Options{},
			`node "k" (Constant): attribute "value_string" is not supported`},
		{"constant without tensor", onnxModel(13, relu1(addNode(node("Constant", "k", nil, []string{"k"},
			pb{}.str(1, "value").varint(20, attrTensor))))), Options{}, `attribute "value" holds no tensor`},
		{"constant two outputs", onnxModel(13, relu1(addNode(node("Constant", "k", nil, []string{"k", "k2"}, intAttr("value_int", 1))))), Options{},
			"must have exactly one named output"},
		{"no op type", onnxModel(13, relu1(addNode(node("", "n", []string{"x"}, []string{"n"})))), Options{}, `node "n" () has no op_type`},
		{"unnamed node without outputs", onnxModel(13, relu1(addNode(pb{}.str(1, "x").str(4, "Foo")))), Options{}, "node 1 (Foo) has no outputs"},
		{"skipped output", onnxModel(13, relu1(addNode(node("Foo", "foo", []string{"x"}, []string{"", "b"})))), Options{},
			"output 0 has no name but a later output has"},
		{"batchnorm spatial", onnxModel(8, relu1(addNode(node("BatchNormalization", "bn", []string{"x", "s", "b", "m", "v"}, []string{"z"},
			intAttr("spatial", 0))))), Options{}, `node "bn" (BatchNormalization): spatial=0`},
		{"batchnorm training", onnxModel(14, relu1(addNode(node("BatchNormalization", "bn", []string{"x", "s", "b", "m", "v"}, []string{"z"},
			intAttr("training_mode", 1))))), Options{}, "training_mode=1 is not supported"},
		{"batchnorm statistics read", onnxModel(9, relu1(addNode(node("BatchNormalization", "bn", []string{"x", "s", "b", "m", "v"}, []string{"z", "mean"})),
			addNode(node("Relu", "r2", []string{"mean"}, []string{"r2"})))), Options{}, `output "mean" (training statistics) is read`},
		{"declared shape contradicts", onnxModel(13, relu1(addValue(vinfo("y", dtFloat, 1, 3)))), Options{}, "contradicts"},
		{"inferred shape contradicts", onnxModel(13, pb{}.msg(1, node("Relu", "relu", []string{"x"}, []string{"y"})).
			msg(11, vinfo("x", dtFloat, 1, 2)).msg(12, vinfo("y", dtFloat, 1, 3))), Options{}, `output "y" is declared as float32 [1 3], but the layer computes float32 [1 2]`},
		{"dangling input", onnxModel(13, relu1(addNode(node("Relu", "r2", []string{"nowhere"}, []string{"r2"})))), Options{},
			`input "nowhere" is not a graph input, a constant or the output of any layer`},
		{"identity cycle", onnxModel(13, relu1(addNode(node("Identity", "i1", []string{"b"}, []string{"a"})),
			addNode(node("Identity", "i2", []string{"a"}, []string{"b"})), addNode(node("Relu", "r2", []string{"a"}, []string{"r2"})))), Options{},
			"is not a graph input, a constant or the output of any layer"},
		{"no outputs", onnxModel(13, pb{}.msg(1, node("Relu", "relu", []string{"x"}, []string{"y"})).msg(11, vinfo("x", dtFloat, 1, 2))), Options{},
			"the model has no outputs"},
		{"unnamed output", onnxModel(13, relu1(addOutput(vinfo("", dtFloat)))), Options{}, "a graph output has no name"},
		{"sparse initializer", onnxModel(13, relu1(func(g pb) pb { return g.msg(15, pb{}) })), Options{}, "sparse initializers are not supported"},
	}
	for _, c := range cases {
		_, err := c.opt.Decode(c.data, "testdata", "bad.onnx")
		if err == nil {
			t.Errorf("%s: loaded", c.name)
			continue
		}
		if !strings.HasPrefix(err.Error(), "bad.onnx: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got %v\nwant it to mention %q", c.name, err, c.want)
		}
	}
}

func decodeOK(t *testing.T, data pb, opt Options) *model.Model {
	t.Helper()
	m, err := opt.Decode(data, "testdata", "ok.onnx")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestEdgeCases(t *testing.T) {
	t.Run("untyped attribute", func(t *testing.T) {
		m := decodeOK(t, onnxModel(13, relu1(addNode(node("LeakyRelu", "lr", []string{"x"}, []string{"z"},
			pb{}.str(1, "alpha").fixed32(2, math.Float32bits(0.3)))), addOutput(vinfo("z", dtFloat)))), Options{})
		wantAttrs(t, findLayer(t, m, "lr"), []model.Attr{flt("alpha", 0.3)})
	})
	t.Run("unpacked floats and packed dims", func(t *testing.T) {
		w := pb{}.bytes(1, protowire.AppendVarint(protowire.AppendVarint(nil, 1), 2)).varint(2, dtFloat).str(8, "w").
			fixed32(4, math.Float32bits(1.5)).fixed32(4, math.Float32bits(-3))
		m := decodeOK(t, onnxModel(13, relu1(addInit(w), addNode(node("Add", "add", []string{"y", "w"}, []string{"z"})), addOutput(vinfo("z", dtFloat)))), Options{})
		wantConst(t, m, "w", model.Float32, []int{1, 2}, f32bytes(1.5, -3))
	})
	t.Run("packed and unpacked list attributes", func(t *testing.T) {
		a := pb{}.str(1, "v").varint(20, attrInts).varint(8, 4).bytes(8, protowire.AppendVarint(protowire.AppendVarint(nil, 5), uint64(1<<64-6)))
		f := pb{}.str(1, "f").varint(20, attrFloats).bytes(7, f32bytes(0.5, 2)).fixed32(7, math.Float32bits(-1))
		m := decodeOK(t, onnxModel(13, relu1(addNode(node("Foo", "foo", []string{"x"}, []string{"z"}, a, f)),
			addValue(vinfo("z", dtFloat, 1, 2)), addOutput(vinfo("z", dtFloat)))), Options{})
		wantAttrs(t, findLayer(t, m, "foo"), []model.Attr{ints("v", 4, 5, -6),
			{Name: "f", Kind: model.AttrFloats, Floats: []float32{0.5, 2, -1}}})
	})
	t.Run("batch given as 0 and -1", func(t *testing.T) {
		for _, d := range []int{0, -1} {
			g := pb{}.msg(1, node("Relu", "relu", []string{"x"}, []string{"y"})).
				msg(11, vinfo("x", dtFloat, d, 2)).msg(12, vinfo("y", dtFloat))
			m := decodeOK(t, onnxModel(13, g), Options{Batch: 5})
			wantShapes(t, m, map[string][]int{"x": {5, 2}, "y": {5, 2}})
		}
	})
	t.Run("fixed batch kept", func(t *testing.T) {
		m := decodeOK(t, onnxModel(13, relu1()), Options{Batch: 5})
		wantShapes(t, m, map[string][]int{"x": {1, 2}})
	})
	t.Run("initializer listed as input", func(t *testing.T) {
		m := decodeOK(t, onnxModel(13, relu1(addInit(tensorPB("w", dtFloat, []int64{2}, f32raw(1, 2))), addInput(vinfo("w", dtFloat, 2)),
			addNode(node("Add", "add", []string{"y", "w"}, []string{"z"})), addOutput(vinfo("z", dtFloat)))), Options{})
		if !slices.Equal(m.Inputs, []string{"x"}) {
			t.Errorf("inputs %q", m.Inputs)
		}
	})
	t.Run("clip with computed bound", func(t *testing.T) {
		g := pb{}.msg(1, node("Clip", "clip", []string{"x", "lo"}, []string{"y"})).
			msg(11, vinfo("x", dtFloat, 1, 2)).msg(11, vscalar("lo", dtFloat)).msg(12, vinfo("y", dtFloat))
		m := decodeOK(t, onnxModel(13, g), Options{})
		wantLayer(t, m, "clip", "Clip", []string{"x", "lo"}, []string{"y"})
	})
	t.Run("dropout with mask read folds", func(t *testing.T) {
		// The mask is all true at inference: a constant of ones as the graph output.
		m := decodeOK(t, onnxModel(13, relu1(addNode(node("Dropout", "drop", []string{"y"}, []string{"d", "mask"})),
			addOutput(vinfo("mask", dtBool)), addOutput(vinfo("d", dtFloat)))), Options{})
		wantLayer(t, m, "drop", "Identity", []string{"y"}, []string{"d"})
		l := wantLayer(t, m, "Identity_mask", "Identity", []string{"mask/value"}, []string{"mask"})
		wantConst(t, m, l.Inputs[0], model.Float32, []int{1, 2}, f32bytes(1, 1))
	})
	t.Run("batchnorm statistics outputs dropped", func(t *testing.T) {
		stat := func(n string) func(pb) pb { return addInit(tensorPB(n, dtFloat, []int64{2}, f32raw(1, 1))) }
		m := decodeOK(t, onnxModel(9, relu1(stat("s"), stat("b"), stat("m"), stat("v"),
			addNode(node("BatchNormalization", "bn", []string{"y", "s", "b", "m", "v"}, []string{"z", "mean", "var"}, intAttr("spatial", 1))),
			addOutput(vinfo("z", dtFloat)))), Options{})
		l := wantLayer(t, m, "bn", "BatchNormalization", []string{"y", "s", "b", "m", "v"}, []string{"z"})
		wantAttrs(t, l, nil)
	})
	t.Run("generated names", func(t *testing.T) {
		g := pb{}.msg(1, node("Relu", "", []string{"x"}, []string{"a"})).
			msg(1, node("Relu", "Relu_0", []string{"a"}, []string{"b"})).
			msg(1, node("Relu", "", []string{"b"}, []string{"c"})).
			msg(11, vinfo("x", dtFloat, 1, 2)).msg(12, vinfo("c", dtFloat))
		m := decodeOK(t, onnxModel(13, g), Options{})
		var names []string
		for _, l := range m.Layers {
			names = append(names, l.Name)
		}
		if !slices.Equal(names, []string{"Relu_0", "Relu_0_2", "Relu_2"}) {
			t.Errorf("layer names %q", names)
		}
	})
	t.Run("omitted optional input in the middle", func(t *testing.T) {
		m := decodeOK(t, onnxModel(13, relu1(addNode(node("Resize", "rs", []string{"y", "", "sc"}, []string{"z"})),
			addInit(tensorPB("sc", dtFloat, []int64{2}, f32raw(1, 2))),
			addValue(vinfo("z", dtFloat, 1, 4)), addOutput(vinfo("z", dtFloat)))), Options{})
		l := wantLayer(t, m, "rs", "Resize", []string{"y"}, []string{"z"})
		wantAttrs(t, l, []model.Attr{{Name: "scales", Kind: model.AttrFloats, Floats: []float32{1, 2}}})
	})
	t.Run("constant copied to an output", func(t *testing.T) {
		m := decodeOK(t, onnxModel(13, relu1(addNode(node("Constant", "k", nil, []string{"k"}, pb{}.str(1, "value_ints").varint(20, attrInts).varint(8, 9))),
			addNode(node("Identity", "ki", []string{"k"}, []string{"kout"})), addOutput(vinfo("kout", dtInt64, 1)))), Options{})
		// A graph output is what a layer writes: an Identity of the value as float32,
		// the type of every activation.
		wantLayer(t, m, "Identity_kout", "Identity", []string{"kout/value"}, []string{"kout"})
		wantConst(t, m, "kout/value", model.Float32, []int{1}, f32bytes(9))
	})
	t.Run("softmax axis defaults", func(t *testing.T) {
		for _, c := range []struct {
			opset int64
			axis  int64
		}{{11, 1}, {13, -1}} {
			m := decodeOK(t, onnxModel(c.opset, relu1(addNode(node("LogSoftmax", "ls", []string{"y"}, []string{"z"})), addOutput(vinfo("z", dtFloat, 1, 2)))), Options{})
			wantAttrs(t, findLayer(t, m, "ls"), []model.Attr{int1("axis", c.axis)})
		}
	})
}
