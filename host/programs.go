package host

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/clhost/clhost/cl"
	"github.com/clhost/clhost/host/cachedir"
	"github.com/clhost/clhost/jit"
)

// storeBinaries resolves Options.Binaries for the engine's device: not on PoCL, where
// taking a program's binary compiles a generic work-group function of every kernel in
// it (seconds each, more than the build itself), and PoCL keeps its own cache of
// compiled kernels (POCL_CACHE_DIR).
func (e *Engine) storeBinaries() bool {
	switch e.opts.Binaries {
	case On:
		return true
	case Off:
		return false
	}
	return !isPoCL(e.device)
}

func isPoCL(d *cl.Device) bool {
	return d.Platform != nil && d.Platform.Name == "Portable Computing Language"
}

// program is one compiled program and what the kernel dump says about it.
type program struct {
	key       string
	layerType string // the type of the first layer that needed it, for the dump name
	source    string
	options   string
	prog      *cl.Program
	fromCache bool // loaded from the on-disk binary cache
	mu        sync.Mutex
	instances []string // "layer (shapes) global/local" lines, for the dump
}

func (p *program) addInstance(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, x := range p.instances {
		if x == s {
			return
		}
	}
	p.instances = append(p.instances, s)
}

// programCache holds one program per distinct (device, source, options): two layer
// instances with the same program text share one build.
//
// Builds run outside the cache's lock, so that networks compiled by different goroutines
// do not wait on each other's unrelated programs; a second caller of a program being
// built waits for that build.
type programCache struct {
	ctx *cl.Context
	dir string // on-disk binary cache, "" for none
	// store says whether built programs are written to dir (Options.Binaries); entries
	// already there are loaded either way.
	store bool
	// logf receives notes (a damaged entry rebuilt); never nil.
	logf     func(format string, args ...any)
	mu       sync.Mutex
	programs map[string]*program
	order    []*program
	building map[string]*pendingBuild
	// peakBuilding is the most builds that were ever in progress at once.
	peakBuilding int
	// extra is CLHOST_BUILD_OPTIONS, added to every program's options (and so to its
	// cache key): "-g -cl-opt-disable" to step through kernels in a debugger on PoCL, or
	// to compile in a fraction of the time where speed does not matter.
	extra string
}

// pendingBuild is a build in progress; done closes when it ends.
type pendingBuild struct {
	done chan struct{}
	p    *program
	err  error
}

func newProgramCache(ctx *cl.Context, dir string, store bool, logf func(string, ...any)) *programCache {
	return &programCache{ctx: ctx, dir: dir, store: store, logf: logf, programs: map[string]*program{}, building: map[string]*pendingBuild{},
		extra: strings.TrimSpace(os.Getenv("CLHOST_BUILD_OPTIONS"))}
}

// withExtra is options with CLHOST_BUILD_OPTIONS added.
func (c *programCache) withExtra(options string) string {
	if c.extra == "" {
		return options
	}
	return strings.TrimSpace(options + " " + c.extra)
}

// key is the cache key of a program: device, driver, source and options.
func (c *programCache) key(source, options string) string {
	d := c.ctx.Device
	return hashText(d.Platform.Name, d.Name, d.DriverVersion, source, options)
}

// built reports whether the program is built already, so that it costs nothing.
func (c *programCache) built(source, options string) bool {
	key := c.key(source, c.withExtra(options))
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.programs[key]
	return ok
}

// get returns the built program for source and options, building it on first use.
// A failed build is not remembered: the next caller tries again and gets the error.
func (c *programCache) get(layerType, source, options string) (*program, error) {
	options = c.withExtra(options)
	key := c.key(source, options)
	c.mu.Lock()
	if p, ok := c.programs[key]; ok {
		c.mu.Unlock()
		return p, nil
	}
	if b, ok := c.building[key]; ok {
		c.mu.Unlock()
		<-b.done
		return b.p, b.err
	}
	b := &pendingBuild{done: make(chan struct{})}
	c.building[key] = b
	c.peakBuilding = max(c.peakBuilding, len(c.building))
	c.mu.Unlock()

	b.p, b.err = c.build(key, layerType, source, options)
	c.mu.Lock()
	delete(c.building, key)
	if b.err == nil {
		c.programs[key] = b.p
		c.order = append(c.order, b.p)
	}
	c.mu.Unlock()
	close(b.done)
	return b.p, b.err
}

// buildRequest is one program a network needs, with the first layer that needs it (for
// the error of a failed build).
type buildRequest struct {
	layer, layerType, source, options string
}

// buildThreads is how many programs build at once: one per CPU, or CLHOST_BUILD_THREADS.
// Drivers compile on the calling thread, and clBuildProgram may run concurrently for
// different programs.
func buildThreads() int {
	if v, err := strconv.Atoi(os.Getenv("CLHOST_BUILD_THREADS")); err == nil && v > 0 {
		return v
	}
	return runtime.NumCPU()
}

// buildAll builds the requested programs on up to threads goroutines and returns each
// request's error. done, when set, is called after each build, one call at a time.
func (c *programCache) buildAll(reqs []buildRequest, threads int, done func()) []error {
	errs := make([]error, len(reqs))
	threads = max(min(threads, len(reqs)), 1)
	var mu sync.Mutex
	next := 0
	var wg sync.WaitGroup
	for range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= len(reqs) {
					return
				}
				r := reqs[i]
				_, errs[i] = c.get(r.layerType, r.source, r.options)
				if done != nil {
					mu.Lock()
					done()
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return errs
}

// build loads a program from the binary cache or compiles it.
func (c *programCache) build(key, layerType, source, options string) (*program, error) {
	p := &program{key: key, layerType: layerType, source: source, options: options}
	var err error
	if p.prog, p.fromCache = c.loadBinary(key, options); p.prog == nil {
		if p.prog, err = c.ctx.BuildProgram(source, options); err != nil {
			// Point the compiler's messages at the user's files and lines, also on
			// drivers that ignore #line file names.
			var be *cl.BuildError
			if errors.As(err, &be) {
				be.Log = jit.MapBuildLog(source, be.Log)
			}
			return nil, err
		}
		p.prog.Log = jit.MapBuildLog(source, p.prog.Log)
		// Some compilers (PoCL's clang) print a bare "1 warning generated." to stderr;
		// the warnings themselves, with file and line, are only in the build log.
		if w := buildWarnings(p.prog.Log); w != "" {
			c.logf("%s: the OpenCL compiler warns:\n%s", layerType, w)
		}
		c.storeBinary(key, p.prog)
	}
	return p, nil
}

// loadBinary returns a program from the on-disk cache, or nil. A damaged or stale
// entry is removed with a note and rebuilt by the caller: the cache is an accelerator,
// never a reason to fail. Entries carry their length and checksum (frameBinary), so a
// truncated or altered file never reaches the driver.
func (c *programCache) loadBinary(key, options string) (*cl.Program, bool) {
	if c.dir == "" {
		return nil, false
	}
	path := filepath.Join(c.dir, key[:32]+cachedir.BinaryExt)
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	bin, err := unframeBinary(raw)
	if err == nil {
		var p *cl.Program
		if p, err = c.ctx.ProgramFromBinary(bin, options); err == nil {
			// Replay the compiler's log of the original build, so a kernel dump reads the
			// same whether the program was compiled or loaded.
			if log, err := os.ReadFile(strings.TrimSuffix(path, cachedir.BinaryExt) + cachedir.LogExt); err == nil {
				p.Log = string(log)
			}
			return p, true
		}
	}
	c.logf("program cache: %s is damaged (%v); rebuilding it", path, err)
	_ = os.Remove(path)
	return nil, false
}

func (c *programCache) storeBinary(key string, p *cl.Program) {
	if c.dir == "" || !c.store {
		return
	}
	bin, err := p.Binary()
	if err != nil || os.MkdirAll(c.dir, 0o755) != nil {
		return
	}
	base := filepath.Join(c.dir, key[:32])
	// The log first: a binary without its log would dump differently.
	writeAtomic(c.dir, base+cachedir.LogExt, []byte(p.Log))
	writeAtomic(c.dir, base+cachedir.BinaryExt, frameBinary(bin))
}

// binaryMagic opens every binary in the cache; the length and a SHA-256 of the driver's
// binary follow, then the binary itself.
const binaryMagic = "clhost-program-binary-1\n"

func frameBinary(bin []byte) []byte {
	sum := sha256.Sum256(bin)
	out := make([]byte, 0, len(binaryMagic)+8+len(sum)+len(bin))
	out = append(out, binaryMagic...)
	out = binary.LittleEndian.AppendUint64(out, uint64(len(bin)))
	out = append(out, sum[:]...)
	return append(out, bin...)
}

// unframeBinary returns the driver's binary of a cache entry, or why the entry is damaged.
func unframeBinary(raw []byte) ([]byte, error) {
	head := len(binaryMagic) + 8 + sha256.Size
	if len(raw) < head || string(raw[:len(binaryMagic)]) != binaryMagic {
		return nil, errors.New("not a clhost program binary")
	}
	n := binary.LittleEndian.Uint64(raw[len(binaryMagic):])
	bin := raw[head:]
	if uint64(len(bin)) != n {
		return nil, fmt.Errorf("%d bytes of binary, the header says %d", len(bin), n)
	}
	if sum := sha256.Sum256(bin); !bytes.Equal(sum[:], raw[len(binaryMagic)+8:head]) {
		return nil, errors.New("checksum mismatch")
	}
	return bin, nil
}

// writeAtomic writes then renames, so a concurrent reader never sees half a file.
// Failures only cost the cache entry.
func writeAtomic(dir, path string, data []byte) {
	tmp, err := os.CreateTemp(dir, cachedir.TempPrefix+"*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), path) != nil {
		_ = os.Remove(tmp.Name())
	}
}

func (c *programCache) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.programs {
		p.prog.Release()
	}
	c.programs = map[string]*program{}
	c.order = nil
}

// dump writes each program used by the network into dir as <type>_<hash>.cl: exactly the
// compiled text, then a comment with its instances, build options and build log. A file
// that already holds the same content is left alone, so a second run writes nothing new.
func (c *programCache) dump(dir string, progs []*program) ([]string, error) {
	if err := ensureDir(dir, "kernel dump"); err != nil {
		return nil, err
	}
	var written []string
	for _, p := range progs {
		name := fmt.Sprintf("%s_%s.cl", safeFileName(p.layerType), p.key[:6])
		head, log := p.source+dumpTrailer(p), dumpLog(p)
		path := filepath.Join(dir, name)
		// Text, instances and options decide whether the file is current: some drivers
		// (NVIDIA's, through its own compiled-kernel cache) print a build log on the first
		// build of a text only, and the dump must not change with that.
		if old, err := os.ReadFile(path); err == nil && strings.HasPrefix(string(old), head) {
			continue
		}
		if err := os.WriteFile(path, []byte(head+log), 0o644); err != nil {
			return written, fmt.Errorf("kernel dump: %w", err)
		}
		written = append(written, path)
	}
	return written, nil
}

// dumpTrailer opens the dump's closing comment: the instances and build options.
func dumpTrailer(p *program) string {
	p.mu.Lock()
	inst := append([]string(nil), p.instances...)
	p.mu.Unlock()
	sort.Strings(inst)
	var b strings.Builder
	b.WriteString("\n/* clhost kernel dump\n")
	b.WriteString(" * layer instances:\n")
	for _, s := range inst {
		b.WriteString(" *   " + commentSafe(s) + "\n")
	}
	fmt.Fprintf(&b, " * build options: %q\n", p.options)
	return b.String()
}

// dumpLog closes the comment with the build log.
func dumpLog(p *program) string {
	log := ""
	if p.prog != nil {
		log = p.prog.Log
	}
	if strings.TrimSpace(log) == "" {
		log = "(empty)"
	}
	var b strings.Builder
	b.WriteString(" * build log:\n")
	for _, line := range strings.Split(log, "\n") {
		b.WriteString(" *   " + commentSafe(line) + "\n")
	}
	b.WriteString(" */\n")
	return b.String()
}

// commentSafe keeps text from closing the dump's trailing comment early.
func commentSafe(s string) string { return strings.ReplaceAll(s, "*/", "* /") }

// safeFileName maps a layer type or tensor name to a portable file name.
func safeFileName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 || strings.Trim(b.String(), ".") == "" {
		return "_"
	}
	return b.String()
}

// buildErrorf wraps a build failure with the layer that needed the program.
func buildErrorf(layer, typ string, err error) error {
	var be *cl.BuildError
	if errors.As(err, &be) {
		return fmt.Errorf("layer %q (%s): the program failed to build: %w", layer, typ, err)
	}
	return fmt.Errorf("layer %q (%s): %w", layer, typ, err)
}

// buildWarnings returns a build log's warning lines, indented, or "". A line repeated
// is given once: PoCL preprocesses the source before it compiles it, and its log holds
// a preprocessor's warning (#warning) from both passes.
func buildWarnings(log string) string {
	var b strings.Builder
	seen := map[string]bool{}
	for _, line := range strings.Split(log, "\n") {
		line = strings.TrimSpace(line)
		if strings.Contains(line, "warning:") && !seen[line] {
			seen[line] = true
			b.WriteString("  " + line + "\n")
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}
