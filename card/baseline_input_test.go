package card

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The baseline reader looks before it reads: a FIFO (which would block a
// plain read for ever), a directory, a device or a file over
// MaxBaselineSize is refused; a line longer than MaxBaselineLine, a
// property longer than MaxPropertyLength or a line with a control or
// format character is refused at its line. (Before: os.ReadFile blocked on
// the FIFO; a line over 64 KiB was an error without a line number; control
// and bidirectional characters were accepted when known was nil.)
func TestReadBaselineRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.txt")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.txt")
	os.WriteFile(big, []byte("liveness/crash held\n#"+strings.Repeat("x", MaxBaselineSize)+"\n"), 0o644)
	for path, want := range map[string]string{
		fifo:        "baseline: " + fifo + ": not a regular file: a named pipe (FIFO) (allowed: a regular file)",
		dir:         "baseline: " + dir + ": not a regular file: a directory",
		"/dev/zero": "baseline: /dev/zero: not a regular file: a character device",
		big:         "baseline: " + big + ": too big: ",
	} {
		if _, err := ReadBaseline(path, known); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("ReadBaseline(%s): %v\nwant %s", path, err, want)
		}
	}
	for text, want := range map[string]string{
		"liveness/crash held\n" + strings.Repeat("#", MaxBaselineLine+1) + "\n": "b.txt:2: line: 1025 bytes (allowed: at most 1024)",
		strings.Repeat("p", MaxPropertyLength+1) + " held\n":                    "b.txt:1: property: 129 bytes (allowed: at most 128)",
		"liveness/crash\u202E held\n":                                           "b.txt:1: line: contains bidirectional override U+202E at character 15 (allowed: printable text, spaces and tabs",
		"liveness/crash held\x1b[2J\n":                                          "b.txt:1: line: contains control character U+001B at character 20",
	} {
		if _, err := ParseBaseline("b.txt", []byte(text), nil); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%.40q: %v\nwant %s", text, err, want)
		}
	}
	ok := filepath.Join(dir, "ok.txt")
	os.WriteFile(ok, []byte("# lockfault suite baseline\nliveness/crash\theld\r\nfailover/manual  violated\n"), 0o644)
	if b, err := ReadBaseline(ok, known); err != nil || len(b.Outcomes) != 2 {
		t.Fatalf("a baseline with a tab and a CRLF line: %v %v", b, err)
	}
}
