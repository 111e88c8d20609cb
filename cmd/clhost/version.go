package main

import (
	"fmt"
	"runtime"
)

// version is the clhost release; the Makefile may override it with -ldflags -X.
var version = "0.1.0"

func init() {
	register(command{name: "version", summary: "print the clhost version", run: func(args []string) error {
		fs := newFlagSet("version")
		if err := parseFlags(fs, args); err != nil {
			return err
		}
		fmt.Printf("clhost %s (%s, %s/%s)\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return nil
	}})
}
