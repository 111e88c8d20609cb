// Command clhost runs models with built-in and user-written OpenCL layers.
//
// Each subcommand lives in its own file and registers itself from init(), so the
// commands stay independent of one another.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/clhost/clhost/host"
)

// command is one subcommand of clhost.
type command struct {
	name    string
	summary string
	// run receives the arguments after the command name. It returns a usageError for
	// bad flags or arguments (exit 2) and any other error for a failure (exit 1).
	run func(args []string) error
}

var commands = map[string]command{}

func register(c command) {
	if _, dup := commands[c.name]; dup {
		panic("clhost: command registered twice: " + c.name)
	}
	commands[c.name] = c
}

// usageError marks an error in how clhost was called; it exits with status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return usageError{fmt.Sprintf(format, args...)}
}

// newFlagSet returns a flag set that reports errors as values instead of exiting,
// so every command shares one error path and exit-code policy.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("clhost "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parseFlags parses args and turns flag-package errors into usage errors.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(os.Stdout)
			fmt.Fprintf(os.Stdout, "usage of %s:\n", fs.Name())
			fs.PrintDefaults()
			return errHelpShown
		}
		return usagef("%v", err)
	}
	return nil
}

var errHelpShown = errors.New("help shown")

// stringList is a repeatable string flag (-c a.xml -c b.xml).
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: clhost <command> [flags]")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	width := 0
	for _, n := range names {
		width = max(width, len(n))
	}
	for _, n := range names {
		fmt.Fprintf(w, "  %-*s  %s\n", width, n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'clhost <command> -h' for the flags of a command.")
}

// compileWorkerCommand is the hidden command that runs host.RunCompileWorker: the engine
// starts this binary with it to compile on PoCL in several processes at once.
const compileWorkerCommand = "compile-worker"

func main() {
	os.Exit(runCommand(os.Args[1:]))
}

// runCommand is runMain as the clhost process runs it: with its stderr filtered
// (filterStderr), and everything written there copied out before it returns, also when
// runMain panics.
func runCommand(args []string) int {
	defer filterStderr()()
	return runMain(args)
}

// runMain is main without os.Exit, so tests can drive the CLI in-process.
func runMain(args []string) int {
	if len(args) == 0 {
		printUsage(os.Stderr)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		printUsage(os.Stdout)
		return 0
	}
	if args[0] == compileWorkerCommand && len(args) == 2 {
		if err := host.RunCompileWorker(args[1]); err != nil {
			fmt.Fprintf(os.Stderr, "clhost %s: %v\n", compileWorkerCommand, err)
			return 1
		}
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(os.Stderr, "clhost: unknown command %q (run 'clhost help' for the list)\n", args[0])
		return 2
	}
	err := c.run(args[1:])
	switch {
	case err == nil, errors.Is(err, errHelpShown):
		return 0
	case errors.As(err, new(usageError)):
		fmt.Fprintf(os.Stderr, "clhost %s: %v\n", c.name, err)
		return 2
	default:
		fmt.Fprintf(os.Stderr, "clhost %s: %v\n", c.name, err)
		return 1
	}
}
