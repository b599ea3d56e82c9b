// Package userfile opens the files a user hands to lockfault (scenarios,
// baselines, histories) safely: regular files only, opened without blocking
// so that a FIFO named in their place cannot hang the reader, and never more
// than a stated number of bytes.
package userfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Open opens path for reading if it is a regular file of at most max bytes.
// It looks before it opens (a FIFO, a device, a socket or a directory is
// refused without being opened), opens with O_NONBLOCK (a file swapped for a
// FIFO in between cannot block the open) and checks the opened file again.
// Errors name the path and say what is allowed.
func Open(path string, max int64) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := regular(path, st, max); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	again, err := f.Stat()
	if err == nil {
		err = regular(path, again, max)
	}
	if err == nil && !os.SameFile(st, again) {
		err = fmt.Errorf("%s: replaced while being opened (allowed: a file nobody is changing)", path)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ReadFile reads a whole regular file of at most max bytes (see Open); a
// file that grows past max while it is read is refused too.
func ReadFile(path string, max int64) ([]byte, error) {
	f, err := Open(path, max)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(data)) > max {
		return nil, tooBig(path, int64(len(data)), max)
	}
	return data, nil
}

// ErrNotRegular is wrapped by the error for anything but a regular file.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooBig is wrapped by the error for a file larger than allowed.
var ErrTooBig = errors.New("too big")

func regular(path string, st fs.FileInfo, max int64) error {
	m := st.Mode()
	if !m.IsRegular() {
		return fmt.Errorf("%s: %w: %s (allowed: a regular file)", path, ErrNotRegular, kind(m))
	}
	if st.Size() > max {
		return tooBig(path, st.Size(), max)
	}
	return nil
}

func tooBig(path string, size, max int64) error {
	return fmt.Errorf("%s: %w: %d bytes or more (allowed: at most %d bytes)", path, ErrTooBig, size, max)
}

// kind names a file mode that is not a regular file.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "a special file (" + m.Type().String() + ")"
}
