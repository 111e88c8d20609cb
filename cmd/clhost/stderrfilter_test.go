package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestTallyFilter: clang's tally lines are dropped, in whatever pieces they come; every
// other byte is written, a line that cannot be a tally as soon as it comes.
func TestTallyFilter(t *testing.T) {
	for _, c := range []struct {
		name   string
		pieces []string
		want   string
	}{
		{"one warning", []string{"1 warning generated.\n"}, ""},
		{"in pieces", []string{"1", " warning", " generated.", "\n"}, ""},
		{"plurals", []string{"2 warnings generated.\n3 errors generated.\n1 warning and 1 error generated.\n12 warnings and 2 errors generated.\n"}, ""},
		{"amid other lines", []string{"a\n1 warning gener", "ated.\nb\n"}, "a\nb\n"},
		{"crlf", []string{"1 error generated.\r\n"}, ""},
		{"user's warning kept", []string{"k.cl:1:2: warning: x\n1 warning generated.\n"}, "k.cl:1:2: warning: x\n"},
		{"not quite", []string{"1 warning generated\n", "x 1 warning generated.\n", "1 warning generated. \n"}, "1 warning generated\nx 1 warning generated.\n1 warning generated. \n"},
		{"line continued after a partial write", []string{"ab", "1 warning generated.\n"}, "ab1 warning generated.\n"},
		{"digits then text", []string{"3", " layers\n"}, "3 layers\n"},
		{"progress", []string{"\r[##..] 1/2", "\r[####] 2/2", "\r\033[K"}, "\r[##..] 1/2\r[####] 2/2\r\033[K"},
		{"partial at the end", []string{"x\n12"}, "x\n12"},
	} {
		var out bytes.Buffer
		f := &tallyFilter{w: &out}
		for _, p := range c.pieces {
			f.Write([]byte(p))
		}
		f.Flush()
		if out.String() != c.want {
			t.Errorf("%s: got %q, want %q", c.name, out.String(), c.want)
		}
	}
	// Text that cannot start a tally is written before its line ends.
	var out bytes.Buffer
	f := &tallyFilter{w: &out}
	f.Write([]byte("\r[#...] 1/4"))
	if out.String() != "\r[#...] 1/4" {
		t.Errorf("a progress line is held back: got %q", out.String())
	}
	f.Write([]byte("1"))
	if f.holding() || out.String() != "\r[#...] 1/41" {
		t.Errorf("a digit that continues a written line is held back: got %q", out.String())
	}
}

// stderrChild is the body of the child process of TestStderrFilterProcess
// (CLHOST_TEST_STDERR=mode): it writes to fd 2 as C code does and to os.Stderr, in
// order, then returns, exits or panics.
func stderrChild(mode string) int {
	flush := filterStderr()
	raw := func(s string) { syscall.Write(2, []byte(s)) }
	os.Stderr.WriteString("go 1\n")
	for _, p := range []string{"1", " warning", " generated.", "\n"} {
		raw(p)
		time.Sleep(time.Millisecond)
	}
	raw("c 2\n")
	os.Stderr.WriteString("go 3\n")
	switch mode {
	case "panic-main":
		defer flush()
		os.Stderr.WriteString("go 4 ")
		panic("boom")
	case "panic-goroutine":
		time.Sleep(300 * time.Millisecond)
		go panic("boom")
		time.Sleep(time.Minute)
	}
	os.Stderr.WriteString("go 4 ")
	raw("partial")
	flush()
	return 3
}

// TestStderrFilterProcess: in a process with the filter, clang's tally written to fd 2
// is dropped and everything else reaches the real stderr, in order: the end of a line
// left unfinished at exit, and a crash report once.
func TestStderrFilterProcess(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mode, want string
		code       int
	}{
		{"exit", "go 1\nc 2\ngo 3\ngo 4 partial", 3},
		{"panic-main", "go 1\nc 2\ngo 3\ngo 4 panic: boom", 2},
		{"panic-goroutine", "go 1\nc 2\ngo 3\npanic: boom", 2},
	} {
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), "CLHOST_TEST_STDERR="+c.mode)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := cmd.ProcessState.ExitCode()
		if code != c.code {
			t.Errorf("%s: exit %d (%v), want %d", c.mode, code, err, c.code)
		}
		got := stderr.String()
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: stderr does not start with %q:\n%s", c.mode, c.want, got)
		}
		if n := strings.Count(got, "panic: boom"); strings.HasPrefix(c.mode, "panic") && n != 1 {
			t.Errorf("%s: the panic is reported %d times:\n%s", c.mode, n, got)
		}
	}
}

// TestRunShowsUserWarningOnce: `clhost run` with a custom kernel that warns, compiled
// afresh, shows the warning once with the user's file and line, and no compiler tally
// ("1 warning generated.", which PoCL prints to fd 2 itself).
func TestRunShowsUserWarningOnce(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(sampleDir, "hardswish.cl"))
	if err != nil {
		t.Fatal(err)
	}
	xml, err := os.ReadFile(filepath.Join(sampleDir, "hardswish.xml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := writeConfig(t, map[string]string{
		"warn.cl":  "#warning clhost-test-warning\n" + string(src),
		"warn.xml": strings.Replace(string(xml), `filename="hardswish.cl"`, `filename="warn.cl"`, 1),
	})
	cmd := exec.Command(self, "run", "-m", filepath.Join(sampleDir, "model.onnx"), "-d", "cpu",
		"-c", filepath.Join(dir, "warn.xml"), "-i", filepath.Join(sampleDir, "input.npy"),
		"-o", t.TempDir(), "--cache-dir", "")
	cmd.Env = append(os.Environ(), "CLHOST_AS_MAIN=1", "POCL_CACHE_DIR="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	got := stderr.String()
	if n := strings.Count(got, "clhost-test-warning"); n != 1 || !strings.Contains(got, "warn.cl:1") {
		t.Errorf("the user's warning, with warn.cl:1, appears %d times, want once:\n%s", n, got)
	}
	if regexp.MustCompile(`(?m)^\d+ (warning|error)s?( and \d+ errors?)? generated\.$`).MatchString(got) {
		t.Errorf("stderr shows a compiler tally:\n%s", got)
	}
}
