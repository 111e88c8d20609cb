package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	builtinkernels "github.com/clhost/clhost/builtin_kernels"
	"github.com/clhost/clhost/cl"
	"github.com/clhost/clhost/serve"
)

// isolatedCheckTimeout bounds the child's whole run, compile included; the child's own
// --timeout ends a kernel that never finishes sooner, with the layer named.
const isolatedCheckTimeout = 5 * time.Minute

// isolatedCheck is serve.Options.IsolatedCheck for `clhost serve`: it runs the model once
// with `clhost run --sanitize` on dev in a child process, at the precision it is served
// at, so that a custom kernel that crashes a process on a CPU device crashes the child,
// not the server. It returns why the model must not be served (the child's crash report
// or findings), or "".
func isolatedCheck(cacheDir string, precision builtinkernels.Precision) func(serve.Source, *cl.Device) string {
	return func(src serve.Source, dev *cl.Device) string {
		self, err := os.Executable()
		if err != nil {
			return fmt.Sprintf("the check of its custom layers in a process of its own could not start: %v", err)
		}
		out, err := os.MkdirTemp("", "clhost-check-")
		if err != nil {
			return fmt.Sprintf("the check of its custom layers in a process of its own could not start: %v", err)
		}
		defer os.RemoveAll(out)
		args := []string{"run", "-m", src.Path, "-d", strconv.Itoa(dev.Index), "--sanitize", "--quiet",
			"--cache-dir", cacheDir, "-o", out, "--timeout", customKernelTimeout.String(), "--precision", precision.String()}
		if src.Weights != "" {
			args = append(args, "--weights", src.Weights)
		}
		for _, c := range src.Configs {
			args = append(args, "-c", c)
		}
		ctx, cancel := context.WithTimeout(context.Background(), isolatedCheckTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, self, args...)
		// CLHOST_AS_MAIN makes a test binary act as the command, as the real one does.
		cmd.Env = append(os.Environ(), "CLHOST_AS_MAIN=1")
		var text bytes.Buffer
		cmd.Stdout, cmd.Stderr = &text, &text
		err = cmd.Run()
		if err == nil {
			return ""
		}
		if ctx.Err() != nil {
			return fmt.Sprintf("the check of its custom layers in a process of its own did not end within %s", isolatedCheckTimeout)
		}
		reason, unsafe := childReason(text.String())
		var ee *exec.ExitError
		if errors.As(err, &ee) && !ee.Exited() {
			return strings.TrimSpace(fmt.Sprintf("the check of its custom layers crashed its process (%v) %s", err, reason))
		}
		if !unsafe {
			// A model that fails to load or compile fails the same way in the server,
			// which says so at greater length (a build log); a NaN from random inputs is
			// logged there, not a reason. Nothing here was dangerous to run.
			return ""
		}
		return reason
	}
}

// customKernelTimeout is the child's --timeout: as long as the server's own check of a
// kernel (serve's customCheckTimeout).
const customKernelTimeout = time.Minute

// childReason picks out of a `clhost run --sanitize` output what says why it failed: the
// crash report, the sanitizer's findings and the error lines, joined on one line. unsafe
// says whether any of it makes the model unsafe to run in the server: a crash, a
// finding other than NaN, a write outside a buffer, a kernel that never finished.
func childReason(out string) (reason string, unsafe bool) {
	var keep []string
	in := "" // the block being read: "crash", "findings", "error"
	for _, line := range strings.Split(out, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case t == "":
			continue
		case strings.HasPrefix(t, "clhost: SIGSEGV") || strings.HasPrefix(t, "clhost: SIGBUS"):
			in, unsafe = "crash", true
			keep = append(keep, strings.TrimPrefix(t, "clhost: "))
		case t == "findings:" || t == "sanitizer findings:":
			in = "findings"
		case strings.HasPrefix(t, "clhost run: ") && !strings.Contains(t, "check failed (see the report above)"):
			in = "error"
			keep = append(keep, strings.TrimPrefix(t, "clhost run: "))
			unsafe = unsafe || strings.Contains(t, "wrote outside its buffer") || strings.Contains(t, "not finished after")
		case in == "findings" && strings.HasPrefix(line, "  "):
			if !strings.Contains(t, "are NaN or infinite from finite inputs") {
				keep = append(keep, t)
				unsafe = true
			}
		case (in == "crash" || in == "error") && strings.HasPrefix(line, "  "):
			keep = append(keep, t)
		default:
			in = ""
		}
	}
	return strings.Join(keep, "; "), unsafe
}
