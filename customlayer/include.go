package customlayer

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// A kernel source's `#include "name"` is resolved here, against the including file's own
// folder, and the header's text put in its place between #line directives. Left to the
// OpenCL compiler, the name would be looked up in the folder clhost runs in (a layer that
// works from its own folder fails from any other, and in a server), and the program
// cache, keyed by the program's text, would keep serving a build from before the
// header's last edit. An include whose file does not exist beside the source is left as
// it is, for the compiler to find or report at the user's line.

// includeLine matches a quoted include directive: `#include "name"`, with an optional
// trailing comment.
var includeLine = regexp.MustCompile(`^\s*#\s*include\s*"([^"]+)"\s*(//.*|/\*.*\*/\s*)?$`)

// pragmaOnce matches `#pragma once`, which the text of a header inlined into the
// program no longer means: the header is inlined once instead.
var pragmaOnce = regexp.MustCompile(`^\s*#\s*pragma\s+once\b`)

// maxIncludeDepth bounds nested includes: a header that includes itself without a guard
// would otherwise never end.
const maxIncludeDepth = 16

// includer reads included files the way the configuration's sources are read: from the
// OS or from the fs.FS the configuration came from.
type includer struct {
	fsys  fs.FS
	total int             // bytes of text so far, bounded like one source
	once  map[string]bool // headers with #pragma once already inlined
	files []string        // every file inlined, in order
}

// join resolves name against the folder of the file at from.
func (in *includer) join(from, name string) string {
	if in.fsys != nil {
		if strings.HasPrefix(name, "/") {
			return path.Clean(strings.TrimLeft(name, "/"))
		}
		return path.Join(path.Dir(from), name)
	}
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(filepath.Dir(from), name)
}

// read returns the file's text, or ok false when there is no such regular file (the
// directive is then left to the compiler).
func (in *includer) read(p string) (data []byte, ok bool, err error) {
	var open func() (io.ReadCloser, error)
	if in.fsys != nil {
		if !fs.ValidPath(p) {
			return nil, false, nil
		}
		st, err := fs.Stat(in.fsys, p)
		if err != nil || !st.Mode().IsRegular() {
			return nil, false, nil
		}
		open = func() (io.ReadCloser, error) { return in.fsys.Open(p) }
	} else {
		st, err := os.Stat(p)
		if err != nil || !st.Mode().IsRegular() {
			return nil, false, nil
		}
		open = func() (io.ReadCloser, error) { return os.Open(p) }
	}
	data, err = readLimited(open)
	return data, true, err
}

// expand returns text, the source at p, with its quoted includes inlined.
func (in *includer) expand(text, p string, depth int) (string, error) {
	if !strings.Contains(text, "include") {
		return text, nil
	}
	lines := strings.SplitAfter(text, "\n")
	var b strings.Builder
	for i, line := range lines {
		m := includeLine.FindStringSubmatch(strings.TrimRight(line, "\r\n"))
		if m == nil {
			b.WriteString(line)
			continue
		}
		hp := in.join(p, m[1])
		data, ok, err := in.read(hp)
		if err != nil {
			return "", fmt.Errorf("%s:%d: #include %q: cannot read %s: %s", p, i+1, m[1], hp, describeIOError(err))
		}
		if !ok {
			b.WriteString(line)
			continue
		}
		if depth >= maxIncludeDepth {
			return "", fmt.Errorf("%s:%d: #include %q: includes nest more than %d deep (a header that includes itself?)", p, i+1, m[1], maxIncludeDepth)
		}
		if in.total += len(data); in.total > MaxFileSize {
			return "", fmt.Errorf("%s:%d: #include %q: the source and its headers are larger than %d MiB", p, i+1, m[1], MaxFileSize>>20)
		}
		header := string(data)
		if once := pragmaOnceAt(header); once >= 0 {
			if in.once[hp] {
				b.WriteString("\n") // inlined before: the line stays, empty
				continue
			}
			in.once[hp] = true
			header = blankLine(header, once)
		}
		in.files = append(in.files, hp)
		inner, err := in.expand(header, hp, depth+1)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "#line 1 %s\n", QuoteLineFile(hp))
		b.WriteString(inner)
		if inner != "" && !strings.HasSuffix(inner, "\n") {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "#line %d %s\n", i+2, QuoteLineFile(p))
	}
	return b.String(), nil
}

// pragmaOnceAt is the index of the line holding `#pragma once`, or -1.
func pragmaOnceAt(text string) int {
	for i, l := range strings.Split(text, "\n") {
		if pragmaOnce.MatchString(l) {
			return i
		}
	}
	return -1
}

// blankLine empties line i of text, keeping the line count.
func blankLine(text string, i int) string {
	lines := strings.Split(text, "\n")
	lines[i] = ""
	return strings.Join(lines, "\n")
}

// quoteLineFile writes a #line file name as a C string literal.
func QuoteLineFile(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			b.WriteByte('?')
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
