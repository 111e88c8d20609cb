package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/clhost/clhost/host/cachedir"
)

func init() {
	register(command{name: "cache", summary: "show (info) or empty (clear) the caches of compiled programs and tuning choices", run: runCache})
}

func runCache(args []string) error {
	if len(args) == 0 || args[0] != "info" && args[0] != "clear" {
		return usagef("want 'clhost cache info' or 'clhost cache clear' [-cache-dir DIR]")
	}
	sub := args[0]
	fs := newFlagSet("cache " + sub)
	dir := fs.String("cache-dir", defaultCacheDir(), "clhost's cache folder")
	pocl := false
	if sub == "clear" {
		fs.BoolVar(&pocl, "pocl", false, "also empty PoCL's kernel cache (every program PoCL compiled, for any application)")
	}
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if *dir == "" {
		return usagef("-cache-dir \"\": no cache folder")
	}
	if sub == "clear" {
		return clearCaches(*dir, pocl)
	}
	return cacheInfo(*dir)
}

func cacheInfo(dir string) error {
	st, err := cachedir.ReadStats(dir)
	if err != nil {
		return err
	}
	fmt.Printf("clhost's cache: %s\n", dir)
	fmt.Printf("  program binaries: %d (%s with their build logs)\n", st.Programs, humanBytes(st.ProgramBytes))
	switch {
	case st.TuningErr != nil:
		fmt.Printf("  tuning choices: tuning.json is damaged (%v); the next run makes its choices again\n", st.TuningErr)
	default:
		fmt.Printf("  tuning choices: %d (%s)\n", st.TuningChoices, humanBytes(st.TuningBytes))
	}
	// The drivers keep compiled kernels of their own, which a first run also rebuilds.
	if d := cachedir.PoCLDir(); d != "" {
		files, bytes := dirSize(d)
		fmt.Printf("PoCL's kernel cache: %s: %d files, %s (POCL_CACHE_DIR moves it; 'clhost cache clear -pocl' empties it)\n", d, files, humanBytes(bytes))
	}
	if d := nvidiaCacheDir(); d != "" {
		if _, err := os.Stat(d); err == nil {
			files, bytes := dirSize(d)
			fmt.Printf("NVIDIA's compiled kernels: %s: %d files, %s (CUDA_CACHE_PATH moves it)\n", d, files, humanBytes(bytes))
		}
	}
	return nil
}

func clearCaches(dir string, pocl bool) error {
	n, err := cachedir.Clear(dir)
	if err != nil {
		return err
	}
	fmt.Printf("removed %d files from %s\n", n, dir)
	if !pocl {
		return nil
	}
	d := cachedir.PoCLDir()
	home, _ := os.UserHomeDir()
	if abs, err := filepath.Abs(d); err != nil || d == "" || abs == "/" || abs == home {
		return fmt.Errorf("PoCL's kernel cache %q: refusing to empty it", d)
	}
	entries, err := os.ReadDir(d)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("PoCL's kernel cache: %w", err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(d, e.Name())); err != nil {
			return fmt.Errorf("PoCL's kernel cache: %w", err)
		}
	}
	fmt.Printf("emptied PoCL's kernel cache %s\n", d)
	return nil
}

// nvidiaCacheDir is where NVIDIA's driver keeps compiled kernels: CUDA_CACHE_PATH, else
// ~/.nv/ComputeCache.
func nvidiaCacheDir() string {
	if d := os.Getenv("CUDA_CACHE_PATH"); d != "" {
		return d
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".nv", "ComputeCache")
	}
	return ""
}

// dirSize is the number of files and bytes under dir (nothing for a missing folder).
func dirSize(dir string) (files int, bytes int64) {
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if info, err := d.Info(); err == nil && info.Mode().IsRegular() {
			files++
			bytes += info.Size()
		}
		return nil
	})
	return files, bytes
}
