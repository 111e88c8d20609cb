// Package cachedir is the layout of clhost's cache folder (host.Options.CacheDir), where an
// engine keeps across runs what is slow to make again, and the tools that report and
// empty it (`clhost cache info`, `clhost cache clear`).
//
// The folder holds compiled program binaries (<key>.bin, the build log beside it as
// <key>.log), tuning choices (tuning.json), the marks of programs compiled into PoCL's
// own kernel cache (pocl-built/) and, briefly, files being written (tmp-*). It may be a
// folder the user shares with other files: Clear removes these alone.
package cachedir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The names of what an engine writes in the cache folder.
const (
	// BinaryExt ends the file of a compiled program, named by the first 32 hex digits of
	// its key; LogExt ends the file of its build log, which a kernel dump replays.
	BinaryExt = ".bin"
	LogExt    = ".log"
	// TuningFile maps layers to the plans tuning chose for them (JSON).
	TuningFile = "tuning.json"
	// MarksDir holds an empty file per program key compiled into PoCL's kernel cache by
	// compile workers, so that the next cold start starts no workers for it.
	MarksDir = "pocl-built"
	// TempPrefix begins the files being written: they are renamed into place when whole,
	// so a concurrent reader never sees half a file.
	TempPrefix = "tmp-"
)

// Stats describes a cache folder.
type Stats struct {
	Dir string
	// Programs counts the program binaries; ProgramBytes is their size with their logs.
	Programs     int
	ProgramBytes int64
	// TuningChoices counts the layers tuning.json holds a choice for; TuningErr says why
	// the file does not parse (the next run makes its choices again).
	TuningChoices int
	TuningBytes   int64
	TuningErr     error
}

// ReadStats reports what a cache folder holds; a folder that does not exist holds
// nothing.
func ReadStats(dir string) (Stats, error) {
	st := Stats{Dir: dir}
	if dir == "" {
		return st, errors.New("no cache folder")
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("cache folder: %w", err)
	}
	for _, de := range entries {
		info, err := de.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		switch name := de.Name(); {
		case strings.HasSuffix(name, BinaryExt):
			st.Programs++
			st.ProgramBytes += info.Size()
		case strings.HasSuffix(name, LogExt):
			st.ProgramBytes += info.Size()
		case name == TuningFile:
			st.TuningBytes = info.Size()
			b, err := os.ReadFile(filepath.Join(dir, name))
			var choices map[string]string
			if err == nil {
				err = json.Unmarshal(b, &choices)
			}
			st.TuningChoices, st.TuningErr = len(choices), err
		}
	}
	return st, nil
}

// Clear removes the program binaries, their logs, tuning choices, the marks of programs
// compiled on PoCL and unfinished writes from a cache folder, and nothing else. It
// returns the number of files removed.
func Clear(dir string) (int, error) {
	if dir == "" {
		return 0, errors.New("no cache folder")
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("cache folder: %w", err)
	}
	removed := 0
	for _, de := range entries {
		name := de.Name()
		if !de.Type().IsRegular() || !(strings.HasSuffix(name, BinaryExt) || strings.HasSuffix(name, LogExt) ||
			name == TuningFile || strings.HasPrefix(name, TempPrefix)) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			return removed, fmt.Errorf("cache folder: %w", err)
		}
		removed++
	}
	// Without the marks the next cold start compiles in workers again: they go with the
	// programs they stand for.
	marks := filepath.Join(dir, MarksDir)
	if list, err := os.ReadDir(marks); err == nil {
		if err := os.RemoveAll(marks); err != nil {
			return removed, fmt.Errorf("cache folder: %w", err)
		}
		removed += len(list)
	}
	return removed, nil
}

// PoCLDir is where PoCL keeps the programs and kernels it compiled: POCL_CACHE_DIR, else
// pocl/kcache under the user's cache folder; "" when neither is known.
func PoCLDir() string {
	if d := os.Getenv("POCL_CACHE_DIR"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "pocl", "kcache")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".cache", "pocl", "kcache")
	}
	return ""
}
