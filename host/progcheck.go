package host

import (
	"errors"
	"fmt"
	"strings"

	"github.com/clhost/clhost/cl"
	"github.com/clhost/clhost/customlayer"
	"github.com/clhost/clhost/jit"
)

// ProgramChecker builds custom-layer programs on one device without a model or an
// engine, to tell the author of a configuration whether the kernel compiles and matches
// its declared buffers (clhost validate, clhost jit --build). Each distinct program
// (options and source) is built once; Close frees them.
type ProgramChecker struct {
	dev *cl.Device
	ctx *cl.Context
	// programs are those built so far, by options and source (nil: it failed to build).
	programs map[string]*cl.Program
}

// ProgramBuildError is a program that did not compile. Its text names the device and
// the options and carries the build log, its lines mapped to the user's files.
type ProgramBuildError struct{ msg string }

func (e *ProgramBuildError) Error() string { return e.msg }

// ErrBuildFailedBefore is the error of Check for a program whose build failed at an
// earlier Check, which returned its ProgramBuildError.
var ErrBuildFailedBefore = errors.New("its program failed to build before")

// NewProgramChecker opens the device a -d spec selects ("" for the first GPU, else the
// first CPU; see cl.Select). The note says which device was picked and why; it is set
// whenever a device was picked, even when opening it failed.
func NewProgramChecker(device string) (c *ProgramChecker, note string, err error) {
	d, note, err := cl.Select(device)
	if err != nil {
		return nil, "", err
	}
	ctx, err := cl.NewContext(d)
	if err != nil {
		return nil, note, err
	}
	return &ProgramChecker{dev: d, ctx: ctx, programs: map[string]*cl.Program{}}, note, nil
}

// DeviceName is the name of the checker's device, as the driver gives it.
func (c *ProgramChecker) DeviceName() string { return c.dev.Name }

// Check builds prog, unless a Check built it before, and checks that prog's entry is a
// kernel of it taking one argument per buffer layer declares. It returns the build log of
// a program it built now (mapped to the user's files, "" when the compiler said nothing
// or the program was built before). A failed build is a *ProgramBuildError the first
// time, ErrBuildFailedBefore after.
func (c *ProgramChecker) Check(layer *customlayer.Layer, prog *jit.Program) (log string, err error) {
	key := prog.Options + "\x00" + prog.Source
	p, done := c.programs[key]
	if !done {
		p, log, err = c.build(prog)
		c.programs[key] = p
		if err != nil {
			return "", err
		}
	}
	if p == nil {
		return "", ErrBuildFailedBefore
	}
	return log, checkEntry(p, c.dev, layer, prog)
}

// Close frees the programs built and the device's context.
func (c *ProgramChecker) Close() {
	for _, p := range c.programs {
		if p != nil {
			p.Release()
		}
	}
	c.programs = nil
	c.ctx.Release()
}

// build compiles prog; a failure is a *ProgramBuildError carrying the build log mapped to
// the user's files, a success returns that log.
func (c *ProgramChecker) build(prog *jit.Program) (*cl.Program, string, error) {
	p, err := c.ctx.BuildProgram(prog.Source, prog.Options)
	if err != nil {
		var be *cl.BuildError
		if errors.As(err, &be) {
			return nil, "", &ProgramBuildError{fmt.Sprintf("build failed on %s (options %q); build log:\n%s", c.dev, prog.Options, strings.TrimRight(jit.MapBuildLog(prog.Source, be.Log), "\n"))}
		}
		return nil, "", &ProgramBuildError{fmt.Sprintf("build failed on %s: %v", c.dev, err)}
	}
	return p, strings.TrimSpace(jit.MapBuildLog(prog.Source, p.Log)), nil
}

// checkEntry checks that the built program p has the layer's entry, taking one argument
// per declared buffer, within the limits of dev (__local memory, work-group size).
func checkEntry(p *cl.Program, dev *cl.Device, layer *customlayer.Layer, prog *jit.Program) error {
	k, err := p.Kernel(prog.Entry)
	if err != nil {
		names, _ := p.KernelNames()
		return fmt.Errorf("entry %q is not a kernel of the program (it has %s): %w", prog.Entry, strings.Join(names, ", "), err)
	}
	defer k.Release()
	n, err := k.NumArgs()
	if err != nil {
		return err
	}
	if n != layer.NumBuffers() {
		return fmt.Errorf("kernel %q takes %d arguments but the configuration declares %d buffers", prog.Entry, n, layer.NumBuffers())
	}
	return checkKernelLimits(k, dev, prog.Local)
}
