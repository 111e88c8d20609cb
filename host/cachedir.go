package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// CacheStats describes a cache folder (Options.CacheDir): compiled program binaries
// (<key>.bin with the build log beside it, <key>.log) and tuning choices (tuning.json).
type CacheStats struct {
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

// ReadCacheStats reports what a cache folder holds; a folder that does not exist holds
// nothing.
func ReadCacheStats(dir string) (CacheStats, error) {
	st := CacheStats{Dir: dir}
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
		case strings.HasSuffix(name, ".bin"):
			st.Programs++
			st.ProgramBytes += info.Size()
		case strings.HasSuffix(name, ".log"):
			st.ProgramBytes += info.Size()
		case name == tuningFile:
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

// ClearCache removes the program binaries, their logs, tuning choices, the marks of
// programs compiled on PoCL and unfinished writes from a cache folder, and nothing else: the folder may be one the user shares
// with other files. It returns the number of files removed.
func ClearCache(dir string) (int, error) {
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
		if !de.Type().IsRegular() || !(strings.HasSuffix(name, ".bin") || strings.HasSuffix(name, ".log") ||
			name == tuningFile || strings.HasPrefix(name, "tmp-")) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			return removed, fmt.Errorf("cache folder: %w", err)
		}
		removed++
	}
	// The marks of programs compiled into PoCL's cache (precompile.go): without them the
	// next cold Compile starts its workers again.
	marks := filepath.Join(dir, precompileMarkers)
	if list, err := os.ReadDir(marks); err == nil {
		if err := os.RemoveAll(marks); err != nil {
			return removed, fmt.Errorf("cache folder: %w", err)
		}
		removed += len(list)
	}
	return removed, nil
}

// tuningFile holds the tuning choices in a cache folder.
const tuningFile = "tuning.json"

// PoCLCacheDir is where PoCL keeps the programs and kernels it compiled: POCL_CACHE_DIR,
// else pocl/kcache under the user's cache folder.
func PoCLCacheDir() string {
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
