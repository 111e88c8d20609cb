package host

import (
	"testing"

	builtinkernels "github.com/clhost/clhost/builtin_kernels"
	"github.com/clhost/clhost/model"
)

// TestFP16PlansAtMost55PercentOfFP32 compares the activation memory (the arena) that
// fp16 and fp32 plan for the three CNNs of bench/models at 224 × 224, batch 1.
func TestFP16PlansAtMost55PercentOfFP32(t *testing.T) {
	for _, c := range []struct {
		name  string
		model func(testing.TB, int, int) *model.Model
	}{{"ResNet-18", resnet18Model}, {"MobileNetV2", mobilenetV2Model}, {"SqueezeNet 1.1", squeezenetModel}} {
		m := c.model(t, 1, 224)
		var bytes [2]int64
		for i, p := range []builtinkernels.Precision{builtinkernels.PrecisionFP32, builtinkernels.PrecisionFP16} {
			e := newTestEngine(t, Options{NoGlobalConfig: true, Precision: p})
			pl, err := e.plan(m)
			if err != nil {
				t.Fatalf("%s %s: %v", c.name, p, err)
			}
			bytes[i] = pl.n.PlannedBytes
			pl.n.release()
		}
		ratio := float64(bytes[1]) / float64(bytes[0])
		t.Logf("%s: activations planned fp32 %d bytes, fp16 %d bytes: %.1f %%", c.name, bytes[0], bytes[1], 100*ratio)
		if ratio > 0.55 {
			t.Errorf("%s: fp16 plans %.1f %% of fp32's activation memory (%d of %d bytes), want ≤ 55 %%", c.name, 100*ratio, bytes[1], bytes[0])
		}
	}
}
