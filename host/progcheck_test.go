package host

import (
	"errors"
	"strings"
	"testing"
)

// TestProgramChecker builds the layers of bad_kernels.xml and missing_param.xml as
// their configurations alone give them (StandInProgram): a compile error carries the
// build log at the user's file:line, then counts as failed before; an entry the program
// lacks and an argument count unlike the Buffers are named; a define without a default
// takes 1 and builds.
func TestProgramChecker(t *testing.T) {
	reg, err := LoadConfigs(Options{Configs: []string{"testdata/custom/bad_kernels.xml", "testdata/custom/missing_param.xml"}, NoGlobalConfig: true})
	if err != nil {
		t.Fatal(err)
	}
	pc, note, err := NewProgramChecker("cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	if !strings.Contains(note, pc.DeviceName()) {
		t.Errorf("note %q does not name the device %q", note, pc.DeviceName())
	}
	check := func(name string) ([]string, error) {
		t.Helper()
		l, ok := reg.Lookup(name)
		if !ok {
			t.Fatalf("no layer %s", name)
		}
		prog, defaulted, err := StandInProgram(l)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		_, err = pc.Check(l, prog)
		return defaulted, err
	}
	_, err = check("Broken")
	var be *ProgramBuildError
	if !errors.As(err, &be) || !strings.Contains(err.Error(), "broken.cl:6:") {
		t.Errorf("Broken: %v; want a build error at broken.cl:6", err)
	}
	if _, err := check("Broken"); !errors.Is(err, ErrBuildFailedBefore) {
		t.Errorf("Broken again: %v; want ErrBuildFailedBefore", err)
	}
	if _, err := check("NoEntry"); err == nil || !strings.Contains(err.Error(), `entry "not_there" is not a kernel of the program (it has three_args)`) {
		t.Errorf("NoEntry: %v", err)
	}
	if _, err := check("ArgCount"); err == nil || !strings.Contains(err.Error(), "takes 3 arguments but the configuration declares 2 buffers") {
		t.Errorf("ArgCount: %v", err)
	}
	if defaulted, err := check("NeedsAlpha"); err != nil || strings.Join(defaulted, ",") != "NeedsAlpha.alpha" {
		t.Errorf("NeedsAlpha: %v, defaulted %v; want a build with alpha 1", err, defaulted)
	}
}
