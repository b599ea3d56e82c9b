package userfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Anything but a regular file is refused before it is read: a FIFO nobody
// writes to (os.ReadFile would block on it for ever), a directory, a device.
func TestRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "scenario.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	cases := map[string]string{fifo: "a named pipe (FIFO)", dir: "a directory", os.DevNull: "a character device"}
	for path, want := range cases {
		_, err := ReadFile(path, 1<<20)
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), path+": not a regular file: "+want+" (allowed: a regular file)") {
			t.Errorf("%s: got %v, want it refused as %s", path, err, want)
		}
	}
}

func TestBoundsTheSize(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, []byte("0123456789"), 0o644)
	if data, err := ReadFile(p, 10); err != nil || string(data) != "0123456789" {
		t.Fatalf("a file of exactly the bound: %q %v", data, err)
	}
	_, err := ReadFile(p, 9)
	if !errors.Is(err, ErrTooBig) || !strings.Contains(err.Error(), "10 bytes or more (allowed: at most 9 bytes)") {
		t.Fatalf("a file one byte over the bound: %v", err)
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "missing"), 9); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a missing file: %v", err)
	}
}
