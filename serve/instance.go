package serve

import (
	"context"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/clhost/clhost/host"
)

// instance is one model compiled on one device: a network per batch size, the inputs
// a batch is packed into, and how long each size takes there.
type instance struct {
	model  *servedModel
	dev    *device
	engine *host.Engine
	nets   map[int]*host.Network
	// staging holds, per batch size, input tensors that batches of several requests
	// are packed into; only the device's worker uses them, one batch at a time.
	staging map[int]map[string]*host.Tensor
	// dirty holds, per batch size and model input, how many leading values of the
	// staged input may be other than zero.
	dirty map[int][]int
	// pinnedStaging says the staged inputs are the networks' pinned buffers, which an
	// inference of other input data overwrites.
	pinnedStaging bool

	// series are the model's metrics on the device.
	series *series
	// timeout bounds each inference (Options.InferTimeout).
	timeout time.Duration

	mu sync.Mutex
	// est is the estimated time of one inference per batch size, in seconds: the
	// warm-up's, then a moving average of what the device took.
	est map[int]float64
}

// estWeight is the weight of the newest measurement in an estimate.
const estWeight = 0.2

func (in *instance) observe(size int, d time.Duration) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if old, ok := in.est[size]; ok {
		in.est[size] = (1-estWeight)*old + estWeight*d.Seconds()
		return
	}
	in.est[size] = d.Seconds()
}

// plan splits items into inferences of the compiled sizes, the largest first, taking
// the least estimated time (a size larger than what is left is padded), and returns
// that time in seconds.
func (in *instance) plan(items int) (sizes []int, seconds float64) {
	in.mu.Lock()
	est := make([]float64, len(in.model.sizes))
	for i, s := range in.model.sizes {
		est[i] = in.est[s]
	}
	in.mu.Unlock()
	// A smaller batch is never taken to cost more than a larger one: an estimate
	// inflated by a slow moment would otherwise keep its size unused, and so
	// never measured again.
	for i := len(est) - 2; i >= 0; i-- {
		est[i] = min(est[i], est[i+1])
	}
	sizes = in.model.sizes
	if !in.model.batched {
		return []int{1}, est[0] * float64(items)
	}
	cost := make([]float64, items+1)
	choice := make([]int, items+1)
	for k := 1; k <= items; k++ {
		cost[k] = math.Inf(1)
		for i, s := range sizes {
			if c := est[i] + cost[max(0, k-s)]; c < cost[k] {
				cost[k], choice[k] = c, s
			}
		}
	}
	var plan []int
	for k := items; k > 0; k -= choice[k] {
		plan = append(plan, choice[k])
	}
	sort.Sort(sort.Reverse(sort.IntSlice(plan)))
	return plan, cost[items]
}

// segment is rows [from, from+n) of a request's items, placed in a chunk; ri is the
// request's index in its batch.
type segment struct {
	r        *request
	ri       int
	from, n  int
	chunkRow int
}

// run executes a batch of requests and answers every one of them.
func (in *instance) run(reqs []*request, items int) (compute time.Duration, err error) {
	plan, _ := in.plan(items)
	outs := make([][][]float32, len(reqs)) // per request, per output
	ri, from := 0, 0
	for _, size := range plan {
		var segs []segment
		for row := 0; row < size && ri < len(reqs); {
			r := reqs[ri]
			n := min(size-row, r.items-from)
			segs = append(segs, segment{r: r, ri: ri, from: from, n: n, chunkRow: row})
			row += n
			from += n
			if from == r.items {
				ri, from = ri+1, 0
			}
		}
		t0 := time.Now()
		res, err := in.runChunk(size, segs)
		d := time.Since(t0)
		compute += d
		if err != nil {
			return compute, err
		}
		in.observe(size, d)
		for _, sg := range segs {
			in.scatter(&outs[sg.ri], res, sg, size)
		}
	}
	in.model.q.answering(len(reqs), in.model.begun.Load())
	for i, r := range reqs {
		r.answer(&reply{outputs: outs[i], device: in.dev.name, series: in.series})
	}
	return compute, nil
}

// runChunk runs one inference of the given size over the rows of segs. A request that
// fills the whole chunk is passed as it is; otherwise the rows are packed, the rest of
// the chunk zeroed.
func (in *instance) runChunk(size int, segs []segment) (map[string]*host.Tensor, error) {
	net := in.nets[size]
	m := in.model
	inputs := make(map[string]*host.Tensor, len(m.inputs))
	whole := len(segs) == 1 && segs[0].from == 0 && segs[0].n == segs[0].r.items && segs[0].n == size
	for i := range m.inputs {
		t := &m.inputs[i]
		stage := in.staging[size][t.name]
		if whole || !m.batched {
			inputs[t.name] = &host.Tensor{Shape: stage.Shape, Data: segs[0].r.inputs[i]}
			if in.pinnedStaging {
				in.dirty[size][i] = len(stage.Data) // the request's data is copied there
			}
			continue
		}
		srcs := make([][]float32, len(segs))
		for k, sg := range segs {
			srcs[k] = sg.r.inputs[i][sg.from*t.row : (sg.from+sg.n)*t.row]
		}
		used := concat(stage.Data, srcs)
		// Rows past the batch's items are zero: cleared where an earlier batch (or
		// the start-up checks) left values.
		dirty := &in.dirty[size][i]
		if *dirty > used {
			clear(stage.Data[used:*dirty])
		}
		*dirty = used
		inputs[t.name] = stage
	}
	ctx, cancel := context.WithTimeout(context.Background(), in.timeout)
	defer cancel()
	res, err := net.Infer(ctx, inputs)
	if err != nil {
		return nil, fmt.Errorf("device %s: model %q at batch %d: %w", in.dev.name, m.name, size, err)
	}
	return res, nil
}

// scatter hands a segment's output rows to its request: the chunk's own slices when
// the request is the whole chunk, a copy otherwise.
func (in *instance) scatter(o *[][]float32, res map[string]*host.Tensor, sg segment, size int) {
	m := in.model
	if *o == nil {
		*o = make([][]float32, len(m.outputs))
	}
	for k := range m.outputs {
		t := &m.outputs[k]
		data := res[t.name].Data
		if !m.batched || (sg.from == 0 && sg.n == sg.r.items && sg.n == size) {
			(*o)[k] = data
			continue
		}
		if (*o)[k] == nil {
			(*o)[k] = make([]float32, sg.r.items*t.row)
		}
		copy((*o)[k][sg.from*t.row:], data[sg.chunkRow*t.row:(sg.chunkRow+sg.n)*t.row])
	}
}
