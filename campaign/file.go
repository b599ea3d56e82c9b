package campaign

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// readRegular reads a definition or scenario file of at most MaxFileSize
// bytes. A FIFO, a device, a socket or a directory is refused before a
// byte is read: the file is opened without blocking (a FIFO with no
// writer would otherwise hang the open) and checked with fstat.
func readRegular(path string) ([]byte, error) {
	return readBounded(path, MaxFileSize)
}

// readBounded is readRegular with another bound.
func readBounded(path string, limit int64) ([]byte, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: the file is larger than %d bytes (allowed: at most %d)", path, limit, limit)
	}
	return data, nil
}

// openRegular opens a regular file for reading, refusing anything else.
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: %w (%s; allowed: a regular file)", path, errNotRegular, fileKind(st.Mode()))
	}
	return f, nil
}

func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file"
}
