package host

import (
	"strconv"
	"testing"
)

// TestModes: the zero Options follow the device as the CLI's defaults do (no timing of
// plans at compile time on any device, pinned buffers on GPUs that are not CPUs too, an in-order queue on
// GPUs and an out-of-order one on CPUs that have it), and the explicit modes hold on any
// device.
func TestModes(t *testing.T) {
	e := newTestEngine(t, Options{NoGlobalConfig: true})
	gpu := e.device.IsGPU()
	discrete := gpu && !e.device.IsCPU() // oclgrind calls itself both
	if e.measuring() || e.pinned() != discrete || e.OutOfOrder() != (!gpu && e.device.OutOfOrder) {
		t.Errorf("zero Options on a device with IsGPU %v: measuring %v, pinned %v, out of order %v",
			gpu, e.measuring(), e.pinned(), e.OutOfOrder())
	}
	for _, on := range []bool{true, false} {
		e.opts.Tune, e.opts.Pinned = Off, Off
		if on {
			e.opts.Tune, e.opts.Pinned = On, On
		}
		if e.measuring() != on || e.pinned() != on {
			t.Errorf("Tune %d, Pinned %d: measuring %v, pinned %v", e.opts.Tune, e.opts.Pinned, e.measuring(), e.pinned())
		}
	}
	if e := newTestEngine(t, Options{NoGlobalConfig: true, Queue: QueueInOrder}); e.OutOfOrder() {
		t.Error("QueueInOrder: the queue is out of order")
	}
	if e := newTestEngine(t, Options{NoGlobalConfig: true, Queue: QueueOutOfOrder}); e.OutOfOrder() != e.device.OutOfOrder {
		t.Errorf("QueueOutOfOrder: out of order %v on a device that supports it: %v", e.OutOfOrder(), e.device.OutOfOrder)
	}
}

// TestDeviceInfo: Engine.Device describes the engine's device, and its Index given as
// Options.Device opens that device again (serve opens an engine per device so).
func TestDeviceInfo(t *testing.T) {
	e := newTestEngine(t, Options{NoGlobalConfig: true})
	d := e.Device()
	if d.Name != e.device.Name || d.Platform.Name != e.device.Platform.Name || d.IsCPU() != e.device.IsCPU() ||
		d.IsGPU() != e.device.IsGPU() || d.ComputeUnits != e.device.ComputeUnits || d.ComputeUnits <= 0 {
		t.Errorf("Device() = %+v for %v", d, e.device)
	}
	again := newTestEngine(t, Options{NoGlobalConfig: true, Device: strconv.Itoa(d.Index)})
	if got := again.Device(); got.Index != d.Index || got.Name != d.Name || got.Platform != d.Platform {
		t.Errorf("Options.Device %q opened %+v, want %+v", strconv.Itoa(d.Index), got, d)
	}
}
