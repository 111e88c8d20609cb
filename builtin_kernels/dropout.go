package builtinkernels

import (
	"fmt"

	"github.com/clhost/clhost/model"
)

func init() { Register("Dropout", dropoutOp{}) }

// dropoutOp is Dropout at inference: the identity on its data input (ratio and
// training_mode, inputs 1 and 2, change nothing there), its output sharing the input's
// buffer. The optional mask output is all true at inference; the ONNX importer folds a
// Dropout away, so this op serves models in clhost's own format.
type dropoutOp struct{}

const dropoutType = "Dropout"

func (dropoutOp) Shapes(l *model.Layer, in [][]int, c []*model.Tensor) ([][]int, error) {
	return sameRule(1, 3, 1, 2)(l, in, c)
}

// OutputType: the mask is ONNX's bool, one byte an element here.
func (dropoutOp) OutputType(_ *model.Layer, k int, first model.DataType) model.DataType {
	if k == 1 {
		return model.Uint8
	}
	return first
}

func (dropoutOp) OutputShapes(_ Params, in [][]int) ([][]int, error) {
	if len(in) < 1 || len(in) > 3 {
		return nil, checkCounts(dropoutType, in, nil, 1, 3, 1)
	}
	// Only the data input is checked: ratio and training_mode are scalars.
	if err := checkShape(dropoutType, "input 0", in[0]); err != nil {
		return nil, err
	}
	return [][]int{cloneShape(in[0])}, nil
}

func (o dropoutOp) check(p Params, in, out [][]int) error {
	if len(out) == 2 {
		return fmt.Errorf("%s: the mask output (output 1) is not computed; only the data output is", dropoutType)
	}
	want, err := o.OutputShapes(p, in)
	if err != nil {
		return err
	}
	return checkOut(dropoutType, out, want)
}

func (o dropoutOp) Plan(p Params, in, out [][]int, _ DeviceInfo) (*Plan, error) {
	if err := o.check(p, in, out); err != nil {
		return nil, err
	}
	return &Plan{AliasInput: 0}, nil
}

func (o dropoutOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	if len(in) == 0 || in[0] == nil {
		return nil, fmt.Errorf("%s: no data input", dropoutType)
	}
	shapes, err := checkTensors(dropoutType, in)
	if err != nil {
		return nil, err
	}
	if err := o.check(p, shapes, out); err != nil {
		return nil, err
	}
	return []*HostTensor{{Shape: cloneShape(out[0]), Data: append([]float32(nil), in[0].Data...)}}, nil
}
