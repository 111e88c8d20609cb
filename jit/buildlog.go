package jit

import (
	"regexp"
	"strconv"
	"strings"
)

// lineDirective matches `#line N "file"` as the assembler writes it.
var lineDirective = regexp.MustCompile(`^\s*#\s*line\s+(\d+)\s+"((?:[^"\\]|\\.)*)"`)

// kernelRef matches a compiler's reference to a line of the program text when the
// compiler ignores #line file names: NVIDIA writes `<kernel>:12:5`, others `<source>:12:5`
// or `<stdin>:12:5`, oclgrind `input.cl:12:5`, and PoCL's clang names the temporary file
// it compiled (`/root/.cache/pocl/kcache/tempfile_Ab12Cd.cl:12:5`) where a macro was
// spelled.
var kernelRef = regexp.MustCompile(`(?:<(?:kernel|source|stdin|input)>|\binput\.cl|[^\s<>=:]*/tempfile_\w+\.cl):(\d+)(:\d+)?`)

// MapBuildLog rewrites the compiler's references to lines of the assembled program into
// the user's file and line, using the program's #line directives. Compilers that honour
// #line (PoCL/clang) already print the user's file; NVIDIA's prints `<kernel>:LINE`,
// which this turns into `custom_layer_kernel.cl:LINE`. Lines of the generated defines keep
// their reference, marked as such.
func MapBuildLog(source, log string) string {
	if !kernelRef.MatchString(log) {
		return log
	}
	type mark struct {
		at   int // assembled line of the directive (1-based)
		line int
		file string
	}
	var marks []mark
	lines := strings.Split(source, "\n")
	for i, l := range lines {
		if m := lineDirective.FindStringSubmatch(l); m != nil {
			n, err := strconv.Atoi(m[1])
			if err == nil {
				marks = append(marks, mark{at: i + 1, line: n, file: unquoteFileName(m[2])})
			}
		}
	}
	return kernelRef.ReplaceAllStringFunc(log, func(ref string) string {
		m := kernelRef.FindStringSubmatch(ref)
		at, err := strconv.Atoi(m[1])
		if err != nil {
			return ref
		}
		var cur *mark
		for i := range marks {
			if marks[i].at < at {
				cur = &marks[i]
			}
		}
		if cur == nil {
			where := "the generated defines"
			if at >= 1 && at <= len(lines) && strings.TrimSpace(lines[at-1]) != "" {
				where += ": " + strconv.Quote(strings.TrimSpace(lines[at-1]))
			}
			if strings.Contains(ref, "/tempfile_") {
				// The temporary file's name means nothing to the user.
				return "line " + m[1] + m[2] + " of " + where
			}
			return ref + " (in " + where + ")"
		}
		return cur.file + ":" + strconv.Itoa(cur.line+at-cur.at-1) + m[2]
	})
}

func unquoteFileName(s string) string {
	if u, err := strconv.Unquote(`"` + s + `"`); err == nil {
		return u
	}
	return s
}
