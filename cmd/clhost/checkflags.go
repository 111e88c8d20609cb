package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/clhost/clhost/host"
	"github.com/clhost/clhost/tensorio"
)

// checkFlags are the debugging flags of `clhost run`: --check, --sanitize, --expect.
type checkFlags struct {
	check, sanitize *bool
	checkDevice     *string
	expect          stringList
	// other is the model compiled on --check-device, and its engine.
	other       *host.Network
	otherEngine *host.Engine
	// expected are the --expect files, read before any work.
	expected map[string]*host.Tensor
}

func addCheckFlags(fs *flag.FlagSet, cf *checkFlags) {
	cf.check = fs.Bool("check", false, "check the inference: every built-in layer against its CPU reference on the device's inputs, every custom layer through the sanitizer (and --expect), the graph outputs against the whole network on the CPU; exit status 1 when a check fails")
	cf.sanitize = fs.Bool("sanitize", false, "run every custom layer again alone in guarded buffers: unwritten output, writes outside its buffers, results that change between runs, inputs it writes (part of --check)")
	cf.checkDevice = fs.String("check-device", "", "also run the model, custom layers included, on this `device` (e.g. cpu) from the same inputs and compare every layer's output with this run's; runs the sanitizer too")
	fs.Var(&cf.expect, "expect", "compare tensor `NAME=FILE.npy` (a tensor or a single-output layer, e.g. a custom layer's output) with the device's value (repeatable)")
}

// any says whether a check was asked for.
func (cf *checkFlags) any() bool {
	return *cf.check || *cf.sanitize || len(cf.expect) > 0 || *cf.checkDevice != ""
}

// openOther compiles the model on --check-device, with the run's other flags.
func (cf *checkFlags) openOther(ef engineFlags) error {
	if *cf.checkDevice == "" {
		return nil
	}
	dev := *cf.checkDevice
	ef.device = &dev
	e, n, err := ef.openWith(host.Options{KeepIntermediates: true})
	if err != nil {
		return fmt.Errorf("--check-device %s: %w", dev, configHint(err, ef.configs))
	}
	cf.other, cf.otherEngine = n, e
	return nil
}

// close releases the --check-device engine.
func (cf *checkFlags) close() {
	if cf.otherEngine != nil {
		cf.otherEngine.Close()
	}
}

// readExpect reads the --expect files.
func (cf *checkFlags) readExpect() error {
	var err error
	cf.expected, err = readExpectFiles(cf.expect)
	return err
}

// readExpectFiles reads NAME=FILE.npy specs; fallback names a spec that gives only the
// file (nil: a name is required).
func readExpectFiles(specs []string) (map[string]*host.Tensor, error) {
	out := map[string]*host.Tensor{}
	for _, s := range specs {
		name, file, ok := strings.Cut(s, "=")
		if !ok || name == "" || file == "" {
			return nil, usagef("--expect %s: want NAME=FILE.npy", s)
		}
		if _, dup := out[name]; dup {
			return nil, usagef("--expect %s: %q given twice", s, name)
		}
		a, err := tensorio.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--expect %s: %w", name, err)
		}
		out[name] = &host.Tensor{Shape: a.Shape, Data: a.Data}
	}
	return out, nil
}

// errCheckFailed is returned when a check fails; the report says which.
var errCheckFailed = errors.New("check failed (see the report above)")

// run infers once with the checks asked for.
func (cf *checkFlags) run(ctx context.Context, n *host.Network, in map[string]*host.Tensor) (map[string]*host.Tensor, *host.CheckReport, error) {
	// --check-device runs the sanitizer too: a layer that writes into its input corrupts
	// both devices' values alike, and only the sanitizer names it as the cause.
	sanitize := *cf.check || *cf.sanitize || cf.other != nil
	opts := host.CheckOptions{Sanitize: sanitize, Expect: cf.expected, NoReferences: !*cf.check, Other: cf.other}
	r, outs, err := n.Check(ctx, in, opts)
	if err != nil {
		return nil, nil, expectFlagError(err)
	}
	return outs, r, nil
}

// expectFlagError names the flag in the library's errors about expectations.
func expectFlagError(err error) error {
	if strings.HasPrefix(err.Error(), "expected tensor") {
		msg := strings.Replace(err.Error(), "Options.NoFuse keeps every layer", "--expect can name only tensors the compiled network keeps", 1)
		return fmt.Errorf("--expect: %s", msg)
	}
	return err
}

// checkOutDir fails at once when the output folder cannot be one (an existing file),
// before any work, and creates it.
func checkOutDir(dir string) error {
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return fmt.Errorf("output folder %s: a file of that name exists", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("output folder: %w", err)
	}
	return nil
}

// configHint adds to an error about layer types that nothing implements what to do about
// them, in the CLI's terms.
func configHint(err error, configs []string) error {
	var ue *host.UnimplementedError
	if !errors.As(err, &ue) {
		return err
	}
	for _, t := range ue.Types {
		if t.Near != nil {
			continue
		}
		if len(configs) == 0 {
			return fmt.Errorf("%w\n(load a custom-layer configuration that defines them with -c FILE.xml)", err)
		}
		return fmt.Errorf("%w\n(the configurations given with -c, %s, do not define them)", err, strings.Join(configs, ", "))
	}
	return err
}
