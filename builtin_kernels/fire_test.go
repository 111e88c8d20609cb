package builtinkernels

import (
	"fmt"
	"strings"
	"testing"

	"github.com/clhost/clhost/internal/opspec"
)

// TestFirePlan runs the fused fire module against its three convolutions' references: the
// chosen tile on this device and on made-up CPUs of each vector width and of many units,
// and forced tiles: bands of one row to the whole plane (each band squeezing the rows
// above and below it), channel groups that split e1's and e3's tiles and leave a partial
// last group, every pixel step; channel counts that leave partial register tiles, planes
// narrower than a vector and a single row (runs shorter than a tile), each part's bias
// and activation, and an output batch stride.
func TestFirePlan(t *testing.T) {
	t.Parallel()
	env := deviceEnv(t)
	q := mustQueue(t, env)
	relu := Attrs{"pads": []int{1, 1, 1, 1}, opspec.SqueezeActivationAttr: opspec.ActRelu, opspec.Expand1ActivationAttr: opspec.ActRelu, opspec.FusedActivationAttr: opspec.ActRelu}
	cases := []opCase{
		{name: "squeezenet-like", gen: "wrrrrrr", attrs: relu,
			in: shapes(sh(2, 12, 9, 11), sh(6, 12, 1, 1), sh(6), sh(10, 6, 1, 1), sh(10), sh(13, 6, 3, 3), sh(13)), out: shapes(sh(2, 23, 9, 11))},
		{name: "no biases, other activations", gen: "w", attrs: Attrs{"pads": []int{1, 1, 1, 1},
			opspec.SqueezeActivationAttr: opspec.ActLeakyRelu, opspec.SqueezeAlphaAttr: float32(0.2),
			opspec.Expand1ActivationAttr: opspec.ActClip, opspec.Expand1MinAttr: float32(-0.5), opspec.Expand1MaxAttr: float32(0.7), opspec.FusedActivationAttr: opspec.ActHardSwish},
			in: shapes(sh(1, 5, 6, 19), sh(9, 5, 1, 1), nil, sh(8, 9, 1, 1), nil, sh(16, 9, 3, 3)), omit: []int{2, 4}, out: shapes(sh(1, 24, 6, 19))},
		{name: "narrow plane", attrs: relu,
			in: shapes(sh(3, 7, 5, 3), sh(4, 7, 1, 1), sh(4), sh(5, 4, 1, 1), sh(5), sh(3, 4, 3, 3), sh(3)), out: shapes(sh(3, 8, 5, 3))},
		{name: "one row", attrs: Attrs{"pads": []int{1, 1, 1, 1}},
			in: shapes(sh(2, 4, 1, 7), sh(3, 4, 1, 1), sh(3), sh(2, 3, 1, 1), sh(2), sh(4, 3, 3, 3), nil), omit: []int{6}, out: shapes(sh(2, 6, 1, 7))},
		{name: "13x13 many channels", attrs: relu,
			in: shapes(sh(1, 40, 13, 13), sh(16, 40, 1, 1), sh(16), sh(24, 16, 1, 1), sh(24), sh(24, 16, 3, 3), sh(24)), out: shapes(sh(1, 48, 13, 13))},
		{name: "wide squeeze at batch 1", attrs: relu,
			in: shapes(sh(1, 96, 13, 13), sh(48, 96, 1, 1), sh(48), sh(32, 48, 1, 1), sh(32), sh(40, 48, 3, 3), sh(40)), out: shapes(sh(1, 72, 13, 13))},
		{name: "output batch stride", attrs: mergeAttrs(relu, Attrs{opspec.OutputBatchStrideAttr: 12*6*9 + 17}),
			in: shapes(sh(2, 5, 6, 9), sh(4, 5, 1, 1), sh(4), sh(4, 4, 1, 1), sh(4), sh(8, 4, 3, 3), sh(8)), out: shapes(sh(2, 12, 6, 9))},
	}
	// The chosen tiles here and on a CPU of many units (bands of a row or two, channel
	// groups); the forced ones below cover each vector width.
	wide := env.dev
	wide.ComputeUnits = 64
	devices := []DeviceInfo{env.dev, wide}
	devSweep, tileSweep := newSweep(t, len(devices), 1), newSweep(t, 3, 1)
	for ci, c := range cases {
		c.typ = opspec.FireType
		ins := c.inputs()
		for _, i := range c.omit {
			c.in[i] = nil
		}
		want, err := fireOp{}.Reference(c.attrs, ins, c.out)
		if err != nil {
			t.Fatalf("%s: reference: %v", c.name, err)
		}
		g, err := fireOp{}.geometry(paramsOr(c.attrs), c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		run := func(what string, plan *Plan) {
			t.Helper()
			got, err := RunPlan(env.ctx, q, plan, placeholders(t, plan, ins, c.omit), c.out)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			compare(t, what, got[0], want[0])
		}
		for _, di := range devSweep.pick(ci) {
			dev := devices[di]
			plan, err := fireOp{}.Plan(c.attrs, c.in, c.out, dev)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			tile, _ := chooseFireTile(g, dev)
			run(fmt.Sprintf("%s %+v", c.name, tile), plan)
		}
		h := g.sq.in[0]
		tiles := ceilDiv(g.e1.m, 5) + ceilDiv(g.e3.m, 5)
		forced := []fireTile{
			{vec: 4, tileChannels: 4, tilePixelVecs: 1, bandRows: 1, channelGroups: 1},
			{vec: 8, tileChannels: 5, tilePixelVecs: 2, bandRows: 3, channelGroups: tiles},
			{vec: 16, tileChannels: 8, tilePixelVecs: 3, bandRows: h, channelGroups: 2},
		}
		for _, ti := range tileSweep.pick(ci) {
			tile := forced[ti]
			plan, err := fireOp{}.plan(c.attrs, c.in, c.out, env.dev, &tile)
			if err != nil {
				t.Fatalf("%s %+v: %v", c.name, tile, err)
			}
			run(fmt.Sprintf("%s %+v", c.name, tile), plan)
		}
	}

	// Convolutions that are not a fire module's are refused by name.
	pad := Attrs{"pads": []int{1, 1, 1, 1}}
	bad := []struct {
		attrs Attrs
		in    [][]int
		want  string
	}{
		{pad, shapes(sh(1, 4, 5, 5), sh(6, 4, 3, 3), nil, sh(6, 6, 1, 1), nil, sh(6, 6, 3, 3)), "squeeze W"},
		{pad, shapes(sh(1, 4, 5, 5), sh(6, 4, 1, 1), nil, sh(6, 6, 3, 3), nil, sh(6, 6, 3, 3)), "1×1 W"},
		{Attrs{}, shapes(sh(1, 4, 5, 5), sh(6, 4, 1, 1), nil, sh(6, 6, 1, 1), nil, sh(6, 6, 3, 3)), "one pixel of padding"},
		{mergeAttrs(pad, Attrs{"strides": []int{2, 2}}), shapes(sh(1, 4, 5, 5), sh(6, 4, 1, 1), nil, sh(6, 6, 1, 1), nil, sh(6, 6, 3, 3)), "stride 1"},
		{pad, shapes(sh(1, 4, 5, 5), sh(6, 4, 1, 1), nil, sh(6, 5, 1, 1), nil, sh(6, 6, 3, 3)), "1×1 expansion"},
		{pad, shapes(sh(1, 4, 5, 5), sh(6, 4, 1, 1), nil, sh(6, 6, 1, 1)), "6 or 7"},
		{mergeAttrs(pad, Attrs{opspec.OutputBatchStrideAttr: 10}), shapes(sh(1, 4, 5, 5), sh(6, 4, 1, 1), nil, sh(6, 6, 1, 1), nil, sh(6, 6, 3, 3)), opspec.OutputBatchStrideAttr},
	}
	for _, b := range bad {
		if _, err := (fireOp{}).OutputShapes(b.attrs, b.in); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%v %v: error %v, want one naming %q", b.attrs, b.in, err, b.want)
		}
	}
}

// TestChooseFireTile: on the 16-core Xeon's shape of device, SqueezeNet's fire modules at
// batch 16 take bands of a few rows and every channel, so the squeeze is repeated only for
// the rows a band shares with the next; at batch 1 the small planes split their channels
// too, so that every unit has work; no tile where one row's buffers exceed the bound.
func TestChooseFireTile(t *testing.T) {
	cpu := DeviceInfo{ComputeUnits: 16, FloatVectorWidth: 16}
	geom := func(n, c, s, e, hw int) fireGeom {
		g, err := fireOp{}.geometry(Attrs{"pads": []int{1, 1, 1, 1}},
			shapes(sh(n, c, hw, hw), sh(s, c, 1, 1), nil, sh(e, s, 1, 1), nil, sh(e, s, 3, 3)))
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	for _, c := range []struct {
		name string
		g    fireGeom
	}{
		{"fire2 b16", geom(16, 64, 16, 64, 55)},
		{"fire4 b16", geom(16, 128, 32, 128, 27)},
		{"fire9 b16", geom(16, 512, 64, 256, 13)},
		{"fire2 b1", geom(1, 64, 16, 64, 55)},
		{"fire9 b1", geom(1, 512, 64, 256, 13)},
	} {
		tile, ok := chooseFireTile(c.g, cpu)
		if !ok {
			t.Fatalf("%s: no tile", c.name)
		}
		items := ceilDiv(c.g.sq.in[0], tile.bandRows) * tile.channelGroups * c.g.sq.n
		if items < cpu.ComputeUnits {
			t.Errorf("%s: %+v makes %d work-items for %d units", c.name, tile, items, cpu.ComputeUnits)
		}
		if tile.vec != 16 || tile.tileChannels != 8 {
			t.Errorf("%s: %+v: want 16 lanes and 8 channels per register tile", c.name, tile)
		}
		if c.g.sq.n == 16 && tile.channelGroups != 1 {
			t.Errorf("%s: %+v: at batch 16 every band should take all channels", c.name, tile)
		}
		if buf := 3 * 4 * c.g.sq.m * fireSL(c.g, tile); buf > maxFireBuffer {
			t.Errorf("%s: %+v: %d bytes of buffers", c.name, tile, buf)
		}
		t.Logf("%s: %+v, %d items", c.name, tile, items)
	}
	if _, ok := chooseFireTile(geom(1, 8, 512, 8, 200), cpu); ok {
		t.Error("a 200-wide plane of 512 squeezed channels: want no tile")
	}
}

// BenchmarkFireCPU times SqueezeNet's fire modules as one fused layer, beside their 3×3
// expansion alone as the Conv plans run it (Winograd where the layer takes it, and the
// channel-vectorised direct tiles); GFLOP/s counts each plan's own work.
func BenchmarkFireCPU(b *testing.B) {
	env := deviceEnvB(b)
	relu := Attrs{"pads": []int{1, 1, 1, 1}, opspec.SqueezeActivationAttr: opspec.ActRelu, opspec.Expand1ActivationAttr: opspec.ActRelu, opspec.FusedActivationAttr: opspec.ActRelu}
	fire := func(name string, n, c, s, e, hw int) opCase {
		return opCase{name: name, attrs: relu,
			in:  shapes(sh(n, c, hw, hw), sh(s, c, 1, 1), sh(s), sh(e, s, 1, 1), sh(e), sh(e, s, 3, 3), sh(e)),
			out: shapes(sh(n, 2*e, hw, hw))}
	}
	n := max(env.dev.ComputeUnits, 1)
	for _, c := range []opCase{
		fire("fire2", n, 64, 16, 64, 55),
		fire("fire4", n, 128, 32, 128, 27),
		fire("fire9", n, 512, 64, 256, 13),
	} {
		ins := c.inputs()
		g, err := fireOp{}.geometry(c.attrs, c.in)
		if err != nil {
			b.Fatal(err)
		}
		fused, err := fireOp{}.Plan(c.attrs, c.in, c.out, env.dev)
		if err != nil {
			b.Fatal(err)
		}
		total := 2.0 * float64(g.sq.macs()+g.e1.macs()+g.e3.macs())
		plans := []namedPlan{{"fused", fused}}
		if testing.Verbose() {
			// Other blockings, for tuning the chooser by hand (go test -v).
			chosen, _ := chooseFireTile(g, env.dev)
			for _, rows := range []int{1, 2, 4, 7, g.sq.in[0]} {
				for _, np := range []int{2, 3} {
					t := fireTile{vec: chosen.vec, tileChannels: chosen.tileChannels, tilePixelVecs: np, bandRows: rows, channelGroups: 1}
					if p, err := (fireOp{}).plan(c.attrs, c.in, c.out, env.dev, &t); err == nil {
						plans = append(plans, namedPlan{fmt.Sprintf("rows%d_np%d", rows, np), p})
					}
				}
			}
		}
		benchPlans(b, env, c.name, plans, ins, c.out, total)
		e3In := shapes(c.out[0][:1:1], nil, nil)
		e3In[0] = []int{n, g.sq.m, g.sq.in[0], g.sq.in[1]}
		e3In[1], e3In[2] = c.in[5], c.in[6]
		e3Out := shapes(sh(n, g.e3.m, g.sq.in[0], g.sq.in[1]))
		e3 := opCase{name: c.name + "_e3", attrs: Attrs{"pads": []int{1, 1, 1, 1}}, in: e3In, out: e3Out}
		vec, _ := cpuConvPlan(g.e3, heuristicCPUTile(g.e3, env.dev), env.dev)
		plans = []namedPlan{{"vec", vec}}
		if p, ok, _ := winoPlan(g.e3, chooseWinoTile(g.e3, env.dev), env.dev); ok {
			plans = append(plans, namedPlan{"wino", p})
		}
		benchPlans(b, env, e3.name, plans, e3.inputs(), e3Out, 2.0*float64(g.e3.macs()))
	}
}
