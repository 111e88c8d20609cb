package host

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/clhost/clhost/builtin_kernels"
	"github.com/clhost/clhost/cl"
	"github.com/clhost/clhost/configs"
	"github.com/clhost/clhost/customlayer"
	"github.com/clhost/clhost/internal/graph"
	"github.com/clhost/clhost/jit"
	"github.com/clhost/clhost/model"
)

// LoadConfigs builds the custom-layer registry an engine with these options would use:
// the global configuration first, then opts.ConfigFS, then opts.Configs. Tools that
// inspect configurations without a device (clhost validate, clhost jit) use it too.
func LoadConfigs(opts Options) (*customlayer.Registry, error) {
	logf := func(format string, args ...any) {
		if opts.Log != nil {
			fmt.Fprintf(opts.Log, "clhost: "+format+"\n", args...)
		}
	}
	return loadConfigs(opts, logf)
}

// loadConfigs builds the custom-layer registry: the global configuration (embedded, or
// every *.xml of CLHOST_CONFIG_DIR), then opts.ConfigFS, then opts.Configs. Problems of
// all files are reported together.
func loadConfigs(opts Options, logf func(string, ...any)) (*customlayer.Registry, error) {
	reg := customlayer.NewRegistry(func(s string) { logf("%s", s) })
	var all customlayer.Errors
	add := func(err error, file string) {
		if err == nil {
			return
		}
		var es customlayer.Errors
		if errors.As(err, &es) {
			all = append(all, es...)
			return
		}
		all = append(all, &customlayer.Error{File: file, Msg: err.Error()})
	}
	if !opts.NoGlobalConfig {
		if dir := os.Getenv(configs.EnvDir); dir != "" {
			files, err := filepath.Glob(filepath.Join(dir, "*.xml"))
			if err != nil || len(files) == 0 {
				add(fmt.Errorf("%s=%s: no *.xml configuration in that folder", configs.EnvDir, dir), dir)
			}
			sort.Strings(files)
			for _, f := range files {
				add(reg.Load(f), f)
			}
		} else {
			add(reg.LoadFS(configs.FS, configs.GlobalFile), configs.GlobalFile)
		}
	}
	for _, c := range opts.ConfigFS {
		add(reg.LoadFS(c.FS, c.Path), c.Path)
	}
	for _, p := range opts.Configs {
		add(reg.Load(p), p)
	}
	if len(all) > 0 {
		return nil, all
	}
	return reg, nil
}

// UnimplementedError lists the layer types of a model that neither a built-in layer nor
// a loaded custom layer implements.
type UnimplementedError struct {
	Types []UnimplementedType
}

// UnimplementedType is one such layer type.
type UnimplementedType struct {
	Type  string
	Layer string // the first layer of that type
	// Near is a loaded custom layer whose name differs from Type only in case or by one
	// edit: most likely the one meant.
	Near *customlayer.Layer
}

func (e *UnimplementedError) Error() string {
	lines := make([]string, len(e.Types))
	for i, t := range e.Types {
		lines[i] = fmt.Sprintf("no implementation for layer type %q (layer %q): ", t.Type, t.Layer)
		if t.Near != nil {
			lines[i] += fmt.Sprintf("did you mean %q (%s)?", t.Near.Name, t.Near.Where())
		} else {
			lines[i] += "neither a built-in layer nor a loaded custom-layer configuration defines it"
		}
	}
	return strings.Join(lines, "\n")
}

// unimplemented notes layer l's type as one nothing implements.
func (e *Engine) unimplemented(err *UnimplementedError, l *model.Layer) *UnimplementedError {
	if err == nil {
		err = &UnimplementedError{}
	}
	t := UnimplementedType{Type: l.Type, Layer: l.Name}
	if near, ok := e.Layers.Near(l.Type); ok {
		t.Near = near
	}
	err.Types = append(err.Types, t)
	return err
}

// executionOrder is the order layers are enqueued in, and their dependency levels.
func executionOrder(m *model.Model, custom func(typ string) bool) ([]int, [][]int, error) {
	if err := graph.InferShapesExcept(m, custom); err != nil {
		return nil, nil, err
	}
	g, err := graph.Build(m)
	if err != nil {
		return nil, nil, err
	}
	return g.Order(), g.Levels(), nil
}

// layerParams presents a model layer's attributes as JIT parameters.
type layerParams struct{ l *model.Layer }

func (p layerParams) Param(name string) (jit.Value, bool) {
	a := p.l.Attr(name)
	if a == nil {
		return jit.Value{}, false
	}
	switch a.Kind {
	case model.AttrInt:
		return jit.Int(a.Int), true
	case model.AttrFloat:
		return jit.Float(float64(a.Float)), true
	case model.AttrInts:
		return jit.Ints(a.Ints...), true
	case model.AttrFloats:
		f := make([]float64, len(a.Floats))
		for i, v := range a.Floats {
			f[i] = float64(v)
		}
		return jit.Floats(f...), true
	case model.AttrString:
		return jit.String(a.Str), true
	}
	return jit.Value{}, false
}

// ParamNames lists the layer's attributes, so that a missing-parameter error shows the
// ones it has.
func (p layerParams) ParamNames() []string {
	names := make([]string, len(p.l.Attrs))
	for i, a := range p.l.Attrs {
		names[i] = a.Name
	}
	return names
}

// matchData finds the constant input of the layer that a Data binding names: the exact
// name, or the last "."/"/"-separated part of the constant's name.
func (n *Network) matchData(l *model.Layer, name string) (string, error) {
	var consts []string
	for _, in := range l.Inputs {
		if n.isConstant(in) {
			consts = append(consts, in)
		}
	}
	for _, c := range consts {
		if c == name {
			return c, nil
		}
	}
	var found []string
	for _, c := range consts {
		i := strings.LastIndexAny(c, "./")
		if c[i+1:] == name {
			found = append(found, c)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		if len(consts) == 0 {
			return "", fmt.Errorf("binding Data %q: the layer has no constant inputs", name)
		}
		return "", fmt.Errorf("binding Data %q: no constant input of the layer has that name (constants: %s)", name, strings.Join(consts, ", "))
	}
	return "", fmt.Errorf("binding Data %q: several constant inputs match (%s)", name, strings.Join(found, ", "))
}

// reorderLaunch prepares a reorder between BFYX and another format for one tensor.
func (n *Network) reorderLaunch(l *model.Layer, from, to customlayer.Format, shape []int, src, dst builtinkernels.BufferRef) (launch, error) {
	op, ok := builtinkernels.Lookup(builtinkernels.ReorderType)
	if !ok {
		return launch{}, errors.New("the reorder kernel is not registered")
	}
	d4, err := jit.Dims4(shape)
	if err != nil {
		return launch{}, err
	}
	s4 := d4[:]
	attrs := builtinkernels.Attrs{"from": from.String(), "to": to.String()}
	plan, err := op.Plan(attrs, [][]int{s4}, [][]int{s4}, builtinkernels.DeviceInfoOf(n.engine.device))
	if err != nil {
		return launch{}, fmt.Errorf("reorder %s→%s: %w", from, to, err)
	}
	if len(plan.Launches) != 1 {
		return launch{}, fmt.Errorf("reorder %s→%s: plan has %d launches, want 1", from, to, len(plan.Launches))
	}
	prog, err := n.engine.programs.get(builtinkernels.ReorderType, plan.Source, plan.Options)
	if err != nil {
		return launch{}, buildErrorf(l.Name, builtinkernels.ReorderType, err)
	}
	n.useProgram(prog)
	la := plan.Launches[0]
	k, err := prog.prog.Kernel(la.Kernel)
	if err != nil {
		return launch{}, err
	}
	n.kernels = append(n.kernels, k)
	if err := builtinkernels.SetArgs(k, la.Args, []builtinkernels.BufferRef{src}, []builtinkernels.BufferRef{dst}, nil); err != nil {
		return launch{}, err
	}
	prog.addInstance(fmt.Sprintf("%s: reorder %s→%s of %v, global %v", l.Name, from, to, shape, la.Global))
	return launch{kernel: k, global: la.Global, local: la.Local}, nil
}

// readAs reports whether every reader of a tensor is a custom layer that takes it in
// format f (declaring f or ANY), so a producer writing f needs no reorder back to BFYX.
// Graph outputs, built-in readers, tensor dumps and --check want BFYX.
func (n *Network) readAs(name string, f customlayer.Format) bool {
	o := n.engine.opts
	if o.DumpTensors != "" || o.KeepIntermediates || slices.Contains(n.Model.Outputs, name) {
		return false
	}
	readers := 0
	for i := range n.Model.Layers {
		l := &n.Model.Layers[i]
		for port, in := range l.Inputs {
			if in != name {
				continue
			}
			readers++
			cfg := n.res.layer(l).custom
			if cfg == nil {
				return false
			}
			declared, found := cfg.FormatOf(customlayer.Input, port)
			if !found || declared != f && declared != customlayer.ANY {
				return false
			}
		}
	}
	return readers > 0
}

// needsReorder tells whether a declared format differs from the network's BFYX.
func needsReorder(f customlayer.Format) bool {
	return f != customlayer.BFYX && f != customlayer.ANY
}

// bindCustom binds a layer to a user's kernel: JIT text, build, load-time checks of
// the entry and its argument count, arguments by arg-index, and reorders for tensors the
// layer declares in another format.
func (n *Network) bindCustom(l *model.Layer, cfg *customlayer.Layer) error {
	where := fmt.Sprintf("layer %q (%s, custom layer from %s)", l.Name, l.Type, cfg.Where())
	stepIdx := len(n.steps)
	s := &step{layer: l.Name, typ: l.Type, custom: true}
	inst := jit.Instance{Name: l.Name, Params: layerParams{l}}
	argBuf := map[int]*cl.Buffer{}
	var bound []*deviceTensor
	var pre, post []launch
	planned := n.customReorders(l, cfg) // the reorders' scratch slots (stepScratch)

	for _, t := range cfg.Inputs() {
		if t.Port >= len(l.Inputs) || l.Inputs[t.Port] == "" {
			return fmt.Errorf("%s: Tensor arg-index %d binds input port %d, but the layer has %d inputs", where, t.ArgIndex, t.Port, len(l.Inputs))
		}
		in, err := n.input(l.Inputs[t.Port])
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		bound = append(bound, in)
		if err := growTensors(&inst.Inputs, t.Port); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		// ANY takes the producer's format; a concrete format other than the one the
		// producer wrote gets a reorder.
		want := t.Format
		if want == customlayer.ANY {
			want = in.format
		}
		inst.Inputs[t.Port] = jit.Tensor{Shape: in.shape, Type: n.typeOf(in.name), Format: want}
		buf, err := in.whole()
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		n.addGuardUser(in.name, stepIdx, fmt.Sprintf("input %d", t.Port), false)
		if want != in.format {
			n.addGuardUser(scratchKey(l.Name, len(pre)+len(post), 0), stepIdx, fmt.Sprintf("input %d (reordered to %s)", t.Port, want), false)
			tmp, err := n.reorderScratch(l, planned, len(pre)+len(post), 4*elements(in.shape))
			if err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
			la, err := n.reorderLaunch(l, in.format, want, in.shape, in.ref(), builtinkernels.BufferRef{Buf: tmp})
			if err != nil {
				return fmt.Errorf("%s: input %d: %w", where, t.Port, err)
			}
			n.engine.logf("layer %q: input %d reordered %s→%s for the custom kernel", l.Name, t.Port, in.format, want)
			pre = append(pre, la)
			buf = tmp
		}
		argBuf[t.ArgIndex] = buf
	}
	outputs := map[int]*deviceTensor{}
	for _, t := range cfg.Outputs() {
		if t.Port >= len(l.Outputs) {
			return fmt.Errorf("%s: Tensor arg-index %d binds output port %d, but the layer has %d outputs", where, t.ArgIndex, t.Port, len(l.Outputs))
		}
		out, ok := outputs[t.Port]
		if !ok {
			var err error
			if out, err = n.allocate(l.Outputs[t.Port], stepIdx); err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
			outputs[t.Port] = out
		}
		if err := growTensors(&inst.Outputs, t.Port); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		inst.Outputs[t.Port] = jit.Tensor{Shape: out.shape, Type: n.typeOf(out.name), Format: t.Format}
		buf, err := out.whole()
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if !needsReorder(t.Format) || n.readAs(out.name, t.Format) {
			n.addGuardUser(out.name, stepIdx, fmt.Sprintf("output %d", t.Port), true)
		}
		if needsReorder(t.Format) && n.readAs(out.name, t.Format) {
			// Every reader takes this layout: keep it, no reorder back to BFYX.
			out.format = t.Format
			n.engine.logf("layer %q: output %d kept in %s for its readers", l.Name, t.Port, t.Format)
		} else if needsReorder(t.Format) {
			n.addGuardUser(scratchKey(l.Name, len(pre)+len(post), 0), stepIdx, fmt.Sprintf("output %d (in %s, before its reorder)", t.Port, t.Format), true)
			tmp, err := n.reorderScratch(l, planned, len(pre)+len(post), 4*elements(out.shape))
			if err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
			la, err := n.reorderLaunch(l, t.Format, customlayer.BFYX, out.shape, builtinkernels.BufferRef{Buf: tmp}, out.ref())
			if err != nil {
				return fmt.Errorf("%s: output %d: %w", where, t.Port, err)
			}
			n.engine.logf("layer %q: output %d reordered %s→BFYX after the custom kernel", l.Name, t.Port, t.Format)
			post = append(post, la)
			buf = tmp
		}
		argBuf[t.ArgIndex] = buf
	}
	for i, name := range l.Outputs {
		if _, ok := outputs[i]; !ok {
			return fmt.Errorf("%s: the model gives the layer output %d (%q), which the config binds to no Tensor", where, i, name)
		}
	}
	for _, d := range cfg.Data {
		name, err := n.matchData(l, d.Name)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		t, err := n.input(name)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		n.addGuardUser(name, stepIdx, fmt.Sprintf("Data %q", d.Name), false)
		if argBuf[d.ArgIndex], err = t.whole(); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
	}
	for i := range inst.Inputs {
		if inst.Inputs[i].Shape == nil && i < len(l.Inputs) {
			// A port the config does not bind still informs the defines' NUM_INPUTS only
			// through bound ports; fill its shape so INPUTn defines stay meaningful.
			if t, err := n.inputShapeOnly(l.Inputs[i]); err == nil {
				inst.Inputs[i] = jit.Tensor{Shape: t.shape, Type: n.typeOf(t.name), Format: customlayer.BFYX}
			}
		}
	}
	prog, err := jit.Generate(cfg, inst)
	if err != nil {
		return err
	}
	n.warnings = append(n.warnings, prog.Warnings...)
	cp, err := n.engine.programs.get(l.Type, prog.Source, prog.Options)
	if err != nil {
		return buildErrorf(l.Name, l.Type+", custom layer from "+cfg.Where(), err)
	}
	n.useProgram(cp)
	names, err := cp.prog.KernelNames()
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	found := false
	for _, k := range names {
		found = found || k == prog.Entry
	}
	if !found {
		return fmt.Errorf("%s: kernel entry %q is not in the built program (its kernels: %s)", where, prog.Entry, strings.Join(names, ", "))
	}
	k, err := cp.prog.Kernel(prog.Entry)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	n.kernels = append(n.kernels, k)
	nargs, err := k.NumArgs()
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if nargs != cfg.NumBuffers() {
		return fmt.Errorf("%s: kernel %q takes %d arguments, but the config declares %d buffers (Tensor and Data)", where, prog.Entry, nargs, cfg.NumBuffers())
	}
	if err := checkKernelLimits(k, n.engine.device, prog.Local); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	for i := 0; i < nargs; i++ {
		if err := k.SetArgBuffer(i, argBuf[i]); err != nil {
			return fmt.Errorf("%s: argument %d: %w", where, i, err)
		}
	}
	s.launches = append(append(append(s.launches, pre...), launch{kernel: k, global: prog.Global, local: prog.Local}), post...)
	s.deps = depsOf(bound)
	s.prog = cp
	s.call = &customCall{cfg: cfg, prog: prog}
	s.desc = fmt.Sprintf("inputs %v outputs %v global %v local %v", tensorShapes(inst.Inputs), tensorShapes(inst.Outputs), prog.Global, prog.Local)
	cp.addInstance(fmt.Sprintf("%s (%s): %s", l.Name, l.Type, s.desc))
	n.steps = append(n.steps, s)
	return nil
}

func growTensors(ts *[]jit.Tensor, port int) error {
	if port < 0 || port > 64 {
		return fmt.Errorf("port index %d out of range", port)
	}
	for len(*ts) <= port {
		*ts = append(*ts, jit.Tensor{})
	}
	return nil
}

func tensorShapes(ts []jit.Tensor) [][]int {
	out := make([][]int, len(ts))
	for i, t := range ts {
		out[i] = t.Shape
	}
	return out
}

// typeOf is the OpenCL type a custom layer's kernel reads a tensor as (its INPUT*_TYPE
// and OUTPUT*_TYPE): a constant's own, and float for every activation.
func (n *Network) typeOf(name string) string {
	if t := n.Model.Tensor(name); t != nil {
		if !t.IsConst() && floatHeld(t.Type) {
			return "float" // an integer activation, held as float32 values (floatHeld)
		}
		if s := t.Type.CLName(); s != "" {
			return s
		}
	}
	return "float"
}

// customReorders lists the bytes of each tensor a custom layer's binding reorders
// (bindCustom), in the order it reorders them: the inputs its config declares in a
// format other than the one their producer wrote, then the outputs its kernel writes in
// a format other than BFYX that not every reader takes as it is. The memory plan gives
// each a scratch buffer that lives for the layer's step (stepScratch).
func (n *Network) customReorders(l *model.Layer, cfg *customlayer.Layer) []int {
	var sizes []int
	bytes := func(name string) int {
		if t := n.Model.Tensor(name); t != nil && t.Shape != nil {
			return 4 * t.Elements()
		}
		return 0
	}
	for _, t := range cfg.Inputs() {
		if t.Port >= len(l.Inputs) || l.Inputs[t.Port] == "" {
			continue // the binding refuses the layer
		}
		from := n.producedFormat(l.Inputs[t.Port])
		if t.Format != customlayer.ANY && t.Format != from {
			sizes = append(sizes, bytes(l.Inputs[t.Port]))
		}
	}
	for _, t := range cfg.Outputs() {
		if t.Port < len(l.Outputs) && needsReorder(t.Format) && !n.readAs(l.Outputs[t.Port], t.Format) {
			sizes = append(sizes, bytes(l.Outputs[t.Port]))
		}
	}
	return sizes
}

// producedFormat is the format a tensor's producer leaves it in: BFYX, unless a custom
// layer writes it in another format that every reader takes (readAs; as bindCustom
// decides, the last of its Tensors on that port that does).
func (n *Network) producedFormat(name string) customlayer.Format {
	f := customlayer.BFYX
	for i := range n.Model.Layers {
		l := &n.Model.Layers[i]
		port := slices.Index(l.Outputs, name)
		if port < 0 {
			continue
		}
		cfg := n.res.layer(l).custom
		if cfg == nil {
			return f
		}
		for _, t := range cfg.Outputs() {
			if t.Port == port && needsReorder(t.Format) && n.readAs(name, t.Format) {
				f = t.Format
			}
		}
		return f
	}
	return f
}

// reorderScratch is the buffer for a custom layer's reorder i: its planned scratch slot
// (planned is customReorders' list), or where the plan has none of that size, a buffer
// of its own.
func (n *Network) reorderScratch(l *model.Layer, planned []int, i, size int) (*cl.Buffer, error) {
	key := scratchKey(l.Name, i, 0)
	if i < len(planned) && planned[i] == size {
		if b, ok := n.slotBuf[key]; ok && n.slotOff[key] == 0 {
			return b, nil
		}
		if v := n.slotView[key]; v != nil {
			return v, nil
		}
	}
	n.engine.logf("layer %q: reorder %d takes a buffer of its own, outside the memory plan", l.Name, i)
	return n.scratch(size)
}

// scratch allocates a device buffer owned by the network.
func (n *Network) scratch(size int) (*cl.Buffer, error) {
	b, err := n.engine.ctx.NewBuffer(cl.MemReadWrite, size)
	if err != nil {
		return nil, err
	}
	n.owned = append(n.owned, b)
	return b, nil
}

// logWarnings logs the custom layers' warnings of a compile, each problem once with the
// layers that have it (jit.GroupWarnings).
func (n *Network) logWarnings() {
	for _, w := range jit.GroupWarnings(n.warnings) {
		n.engine.warnOnce(w)
	}
	n.warnings = nil
}
