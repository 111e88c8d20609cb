package host

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/clhost/clhost/host/cachedir"
)

// TestCacheStatsAndClear: cachedir.ReadStats counts a compile's binaries and tuning
// choices and notes a damaged tuning file; cachedir.Clear removes clhost's files and leaves others.
func TestCacheStatsAndClear(t *testing.T) {
	cache := t.TempDir()
	e := newTestEngine(t, Options{CacheDir: cache, Binaries: On, Tune: On, NoGlobalConfig: true})
	if _, err := e.Compile(slowFastModel(t)); err != nil {
		t.Fatal(err)
	}
	writeFile(t, cache, "notes.txt", "the user's")
	bins, _ := filepath.Glob(filepath.Join(cache, "*.bin"))
	st, err := cachedir.ReadStats(cache)
	if err != nil {
		t.Fatal(err)
	}
	if st.Programs != len(bins) || st.Programs != 3 || st.ProgramBytes <= 0 || st.TuningChoices != 1 || st.TuningErr != nil {
		t.Errorf("stats %+v, want the 3 candidates' binaries and 1 choice", st)
	}
	writeFile(t, cache, cachedir.TuningFile, "{")
	if st, _ = cachedir.ReadStats(cache); st.TuningErr == nil {
		t.Error("a damaged tuning.json reads without error")
	}
	// Marks of programs compiled into PoCL's cache by workers (precompile.go).
	if err := os.MkdirAll(filepath.Join(cache, cachedir.MarksDir), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(cache, cachedir.MarksDir), "0123abcd", "")
	removed, err := cachedir.Clear(cache)
	if err != nil || removed != 2*len(bins)+2 {
		t.Errorf("Clear removed %d files (%v), want %d", removed, err, 2*len(bins)+2)
	}
	left, _ := os.ReadDir(cache)
	if len(left) != 1 || left[0].Name() != "notes.txt" {
		t.Errorf("left in the folder: %v, want notes.txt alone", left)
	}
	if st, err := cachedir.ReadStats(filepath.Join(cache, "none")); err != nil || st.Programs != 0 {
		t.Errorf("a missing folder: %+v, %v", st, err)
	}
}
