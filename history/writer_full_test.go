package history

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// smallDisk mounts a 64 KiB tmpfs on a fresh directory (unmounted when the
// test ends), or skips the test saying why.
func smallDisk(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"); err != nil {
		t.Skipf("cannot mount a 64 KiB tmpfs to fill (needs root or CAP_SYS_ADMIN): %v", err)
	}
	// Cleanups run last-in first-out: the unmount comes before TempDir's
	// removal of the directory. A lazy unmount (MNT_DETACH) succeeds even
	// if a failed test left a file open on it.
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// On a disk that fills up the writer stops at its first error: it reports
// it (Err, Close), writes nothing after it even once space is free again
// (no gap in the middle of the history), counts the appends it drops, and
// the reader refuses what was left, a history cut short. (Before: the
// writer carried on after the failed write, and the file had a hole.)
func TestWriterStopsAtTheFirstErrorOnAFullDisk(t *testing.T) {
	dir := smallDisk(t)
	ballast := filepath.Join(dir, "ballast")
	if err := os.WriteFile(ballast, make([]byte, 16<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "history.jsonl")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() }) // before the unmount
	// Fixed times: every run lays the file out the same way, so the write
	// that fills the disk is cut short at the same byte.
	ev := func(i int) Event {
		return Event{Time: 1_000_000_000_000 + int64(i), Kind: Note, Op: "fill", Detail: strings.Repeat("x", 300)}
	}
	appended := 0
	for ; appended < 1000 && w.Err() == nil; appended++ {
		w.Append(ev(appended))
	}
	first := w.Err()
	if !errors.Is(first, syscall.ENOSPC) {
		t.Fatalf("after %d appends to a full disk: Err() = %v, want no space left on device", appended, first)
	}
	written := w.Count()
	if written < 100 || written >= int64(appended) || w.Dropped() != int64(appended)-written {
		t.Fatalf("%d appended, %d written, %d dropped", appended, written, w.Dropped())
	}
	size := fileSize(t, path)

	// Space again: a writer that carried on would now write events after
	// the lost one.
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		w.Append(ev(appended + i))
	}
	if got := fileSize(t, path); got != size {
		t.Fatalf("the writer wrote %d bytes after its first error", got-size)
	}
	if d := w.Dropped(); d != int64(appended)-written+5 {
		t.Fatalf("dropped %d, want %d", d, int64(appended)-written+5)
	}
	if err := w.Close(); err != first {
		t.Fatalf("Close() = %v, want the first error %v", err, first)
	}
	if err := w.Close(); err != first {
		t.Fatalf("a second Close() = %v, want the first error again", err)
	}

	// The file: the events written whole, then the torn start of the one
	// that did not fit. The reader refuses it at that line.
	data, _ := os.ReadFile(path)
	if n := strings.Count(string(data), "\n"); int64(n) != written || data[len(data)-1] == '\n' {
		t.Fatalf("%d whole lines for %d events written; last byte %q", n, written, data[len(data)-1])
	}
	want := filepath.Base(path) + ":" + itoa(int(written)+1) + ": newline: missing at the end of the last line"
	if evs, err := Read(path); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Read of the truncated history: %d events, %v; want %s", len(evs), err, want)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}
