package host

import (
	"math"

	"github.com/clhost/clhost/cl"
	"github.com/clhost/clhost/internal/graph"
	"github.com/clhost/clhost/internal/opspec"
	"github.com/clhost/clhost/model"
)

func (n *Network) recordProfile(events [][]*cl.Event) {
	n.profile = n.profile[:0]
	origin := uint64(math.MaxUint64)
	for si, s := range n.steps {
		if len(s.launches) == 0 {
			continue
		}
		lt := LayerTime{Layer: s.layer, Type: s.typ, Custom: s.custom, Kernels: len(s.launches), Flops: s.flops, Halves: s.lanes != nil}
		for li, e := range events[si] {
			queued, start, end, err := e.Profile()
			if err != nil || end < start {
				continue
			}
			lt.DeviceNs += end - start
			if li == 0 {
				lt.QueuedNs, lt.StartNs = queued, start
				origin = min(origin, queued)
			}
			lt.EndNs = max(lt.EndNs, end)
		}
		n.profile = append(n.profile, lt)
	}
	for i := range n.profile {
		p := &n.profile[i]
		if p.EndNs == 0 {
			continue
		}
		p.QueuedNs -= min(origin, p.QueuedNs)
		p.StartNs -= min(origin, p.StartNs)
		p.EndNs -= min(origin, p.EndNs)
	}
}

// Profile returns the per-layer device times of the last inference; it is empty unless
// the engine was opened with Options.Profile.
func (n *Network) Profile() []LayerTime {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]LayerTime(nil), n.profile...)
}

// convPlanes is the output shape a layer's work is counted on: for a Conv that pools
// its planes (FusedGlobalAveragePoolAttr, FusedMaxPoolPrefix) the planes' shape, out
// otherwise.
func convPlanes(l *model.Layer, in, out [][]int) [][]int {
	_, maxPooled := graph.MaxPoolOf(l)
	pooled := l.Int(opspec.FusedGlobalAveragePoolAttr, 0) != 0 || maxPooled
	if l.Type != "Conv" || !pooled || len(in) < 2 || len(out) != 1 || len(out[0]) < 2 {
		return out
	}
	win, err := graph.ConvGeometry(l, in[0], in[1])
	if err != nil {
		return out
	}
	return [][]int{append([]int{out[0][0], out[0][1]}, win.Out...)}
}

// layerFlops counts the multiply-adds (as two operations) of the compute-heavy layers,
// the fused convolution layers as the convolutions they stand for (a fused kernel's
// recomputed rows not counted).
func layerFlops(typ string, in, out [][]int) float64 {
	if len(out) == 0 || len(in) < 2 || in[1] == nil {
		return 0
	}
	// window is a 4-D weight's multiply-adds per output value.
	window := func(w []int) float64 {
		if len(w) != 4 {
			return 0
		}
		return float64(w[1] * w[2] * w[3])
	}
	switch typ {
	case opspec.InvertedResidualType:
		// X (N, C, H, W), 1×1 W (M, C, 1, 1), depthwise W (M, 1, kh, kw), [projection W
		// (MO, M, 1, 1)]; the output's spatial dimensions are the depthwise ones.
		if len(in) < 4 || len(in[0]) != 4 || len(in[1]) != 4 || len(out[0]) != 4 {
			return 0
		}
		x, m, y := in[0], float64(in[1][0]), out[0]
		pixels := float64(y[0] * y[2] * y[3])
		macs := float64(x[0]*x[2]*x[3])*m*window(in[1]) + pixels*m*window(in[3])
		if len(in) > 5 && in[5] != nil {
			macs += pixels * float64(in[5][0]) * window(in[5])
		}
		return 2 * macs
	case opspec.FireType:
		// X (N, C, H, W), squeeze W (S, C, 1, 1), [B], 1×1 W (E1, S, 1, 1), [B], 3×3 W
		// (E3, S, 3, 3); every part on the output's plane.
		if len(in) < 6 || len(out[0]) != 4 || len(in[1]) != 4 || len(in[3]) != 4 || len(in[5]) != 4 {
			return 0
		}
		y := out[0]
		pixels := float64(y[0] * y[2] * y[3])
		return 2 * pixels * (float64(in[1][0])*window(in[1]) + float64(in[3][0])*window(in[3]) + float64(in[5][0])*window(in[5]))
	}
	switch typ {
	case "Conv":
		w := in[1] // M × C/group × kernel...
		k := 1
		for _, d := range w[1:] {
			k *= d
		}
		return 2 * float64(elements(out[0])) * float64(k)
	case "Gemm", "MatMul":
		a := in[0]
		if len(a) == 0 {
			return 0
		}
		k := a[len(a)-1]
		if typ == "Gemm" && len(a) == 2 && a[0] != out[0][0] {
			k = a[0] // transA
		}
		return 2 * float64(elements(out[0])) * float64(k)
	}
	return 0
}

func elements(s []int) int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}
