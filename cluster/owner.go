package cluster

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ownsListener reports whether process pid holds a listening TCP socket on
// port (any local address), from /proc: the listening sockets' inodes in
// /proc/net/tcp{,6}, then pid's descriptors. A server that answers on its
// port may be another process's: ports are probed free and released before
// a node binds them, and another run may bind one in between.
func ownsListener(pid, port int) (bool, error) {
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		if err := listeningInodes(f, port, inodes); err != nil && !os.IsNotExist(err) {
			return false, err
		}
	}
	if len(inodes) == 0 {
		return false, nil
	}
	fds, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
	if err != nil {
		return false, err
	}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "fd", fd.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		if strings.HasPrefix(link, "socket:[") && inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] {
			return true, nil
		}
	}
	return false, nil
}

// maxProcNetLines bounds the lines read from one /proc/net/tcp file.
const maxProcNetLines = 1 << 20

// listeningInodes adds the inodes of the sockets in LISTEN state (0A) on
// port listed in file (the /proc/net/tcp format: "sl local_address
// rem_address st ... inode", addresses as HEXIP:HEXPORT).
func listeningInodes(file string, port int, into map[string]bool) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	want := fmt.Sprintf(":%04X", port)
	sc := bufio.NewScanner(f)
	for i := 0; sc.Scan(); i++ {
		if i >= maxProcNetLines {
			return fmt.Errorf("%s: more than %d lines", file, maxProcNetLines)
		}
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[3] != "0A" || !strings.HasSuffix(fields[1], want) {
			continue
		}
		into[fields[9]] = true
	}
	return sc.Err()
}
