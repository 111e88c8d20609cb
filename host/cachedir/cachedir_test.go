package cachedir

import (
	"os"
	"path/filepath"
	"testing"
)

// TestStatsAndClear: ReadStats counts binaries with their logs and tuning choices and
// notes a damaged tuning file; Clear removes what an engine writes (marks and unfinished
// writes too) and leaves the user's files. host's TestCacheStatsAndClear does the same on
// a folder a real compile filled.
func TestStatsAndClear(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a"+BinaryExt, "12345")
	write("a"+LogExt, "67")
	write("b"+BinaryExt, "890")
	write(TuningFile, `{"l1": "p", "l2": "q"}`)
	write(filepath.Join(MarksDir, "0123abcd"), "")
	write(TempPrefix+"42", "half")
	write("notes.txt", "the user's")
	st, err := ReadStats(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Programs != 2 || st.ProgramBytes != 10 || st.TuningChoices != 2 || st.TuningErr != nil {
		t.Errorf("stats %+v, want 2 programs of 10 bytes and 2 choices", st)
	}
	write(TuningFile, "{")
	if st, _ = ReadStats(dir); st.TuningErr == nil {
		t.Error("a damaged tuning file reads without error")
	}
	if n, err := Clear(dir); err != nil || n != 6 {
		t.Errorf("Clear removed %d files (%v), want 6", n, err)
	}
	left, _ := os.ReadDir(dir)
	if len(left) != 1 || left[0].Name() != "notes.txt" {
		t.Errorf("left in the folder: %v, want notes.txt alone", left)
	}
	missing := filepath.Join(dir, "none")
	if st, err := ReadStats(missing); err != nil || st.Programs != 0 {
		t.Errorf("a missing folder: %+v, %v", st, err)
	}
	if n, err := Clear(missing); err != nil || n != 0 {
		t.Errorf("clearing a missing folder: %d, %v", n, err)
	}
	if _, err := ReadStats(""); err == nil {
		t.Error("no folder: no error")
	}
}

func TestPoCLDir(t *testing.T) {
	t.Setenv("POCL_CACHE_DIR", "/x/pocl")
	if d := PoCLDir(); d != "/x/pocl" {
		t.Errorf("POCL_CACHE_DIR set: %q", d)
	}
	t.Setenv("POCL_CACHE_DIR", "")
	t.Setenv("XDG_CACHE_HOME", "/x/cache")
	if d := PoCLDir(); d != filepath.Join("/x/cache", "pocl", "kcache") {
		t.Errorf("XDG_CACHE_HOME set: %q", d)
	}
}
