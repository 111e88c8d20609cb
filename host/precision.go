package host

import (
	"encoding/binary"
	"fmt"
	"math"

	builtinkernels "github.com/clhost/clhost/builtin_kernels"
	"github.com/clhost/clhost/cl"
	"github.com/clhost/clhost/model"
)

// probeMMA says whether the engine's device runs clhost's tensor-core kernels (inline
// PTX mma.sync); a probe run at load replaces it where the build has one. Without one,
// no device does, and tf32 runs the fp32 kernels.
var probeMMA = func(*Engine) bool { return false }

// precision is the precision the engine's networks run at: Options.Precision, except
// that tf32 on a device without reachable tensor cores runs fp32, which the log says
// once per engine.
func (e *Engine) precision() builtinkernels.Precision {
	p := e.opts.Precision
	if p == builtinkernels.PrecisionTF32 && !probeMMA(e) {
		if _, seen := e.warned.LoadOrStore("precision tf32 fallback", true); !seen {
			e.logf("precision tf32: %s has no tensor cores clhost can reach (mma.sync); the fp32 kernels run", e.device.Name)
		}
		return builtinkernels.PrecisionFP32
	}
	return p
}

// Precision is the precision the engine's networks run at (Options.Precision, or fp32
// where tf32 found no tensor cores).
func (e *Engine) Precision() builtinkernels.Precision { return e.precision() }

// storeHalf says whether activations are stored as half (fp16 storage, on every device:
// the kernels read and write them with vload_half / vstore_half).
func (e *Engine) storeHalf() bool { return e.opts.Precision == builtinkernels.PrecisionFP16 }

// planDevice is what plans see of the engine's device, its precision included.
func (e *Engine) planDevice() builtinkernels.DeviceInfo {
	d := builtinkernels.DeviceInfoOf(e.device)
	d.Precision = e.precision()
	if d.Precision == builtinkernels.PrecisionFP16 {
		// As precision() does for tf32: where an NVIDIA GPU failed the probe, the log
		// says why once, and the half kernels run without tensor cores.
		d.MMA = probeMMA(e)
	}
	return d
}

// halfConstantKey names a constant's half copy among the network's tensors: a layer
// whose plan stores half reads its weights as half, a float plan's from the float copy.
func halfConstantKey(name string) string { return name + "\x00half" }

// inputHalf returns a constant as half values on the device, uploading it on first use.
func (n *Network) inputHalf(name string) (*deviceTensor, error) {
	key := halfConstantKey(name)
	if t, ok := n.tensors[key]; ok {
		return t, nil
	}
	t := n.Model.Tensor(name)
	if t == nil || !t.IsConst() {
		// An activation: the storage plan gave it its storage already.
		return n.input(name)
	}
	data := halfBytes(constantBytes(t))
	if len(data) == 0 {
		return nil, fmt.Errorf("constant %q is empty", name)
	}
	buf, err := n.engine.ctx.NewBufferFrom(cl.MemReadOnly, data)
	if err != nil {
		return nil, fmt.Errorf("constant %q as half: %w", name, err)
	}
	n.owned = append(n.owned, buf)
	dt := &deviceTensor{name: key, shape: append([]int(nil), t.Shape...), buf: buf, ready: -1, half: true}
	n.tensors[key] = dt
	return dt, nil
}

// halfBytes rounds float32 little-endian values to half.
func halfBytes(f []byte) []byte {
	out := make([]byte, len(f)/2)
	for i := 0; i+3 < len(f); i += 4 {
		h := model.Float32ToHalf(math.Float32frombits(binary.LittleEndian.Uint32(f[i:])))
		binary.LittleEndian.PutUint16(out[i/2:], h)
	}
	return out
}

// halfToFloats widens half little-endian values to float32.
func halfToFloats(b []byte, out []float32) {
	for i := range out {
		out[i] = model.HalfToFloat32(binary.LittleEndian.Uint16(b[2*i:]))
	}
}

// readFloats reads a device tensor's values as float32, widening half storage.
func (n *Network) readFloats(t *deviceTensor) ([]float32, error) {
	data := make([]float32, elements(t.shape))
	if !t.half {
		err := n.engine.queue.Read(t.buf, t.byteOff(), float32Bytes(data), nil)
		return data, err
	}
	raw := make([]byte, 2*len(data))
	if err := n.engine.queue.Read(t.buf, t.byteOff(), raw, nil); err != nil {
		return nil, err
	}
	halfToFloats(raw, data)
	return data, nil
}
