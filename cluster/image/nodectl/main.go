// Command lockfault-nodectl drives the node shim's files from inside a node's
// container, for the Docker backend when the daemon is remote (the harness
// cannot map or truncate files on the daemon's host). It is built into the
// node image by cluster/image/build.sh and run with `docker exec`:
//
//	lockfault-nodectl clock-offset FILE NS      set the clock offset (ns)
//	lockfault-nodectl clock-drift FILE NS       set the drift (ns per second)
//	lockfault-nodectl clock-get FILE            print the current offset (ns)
//	lockfault-nodectl power-loss DIR [--dbfilename NAME]
//	                                            cut DIR's persistence files to
//	                                            what was fsync'd; print a JSON
//	                                            report
//
// The clock's drift runs on this kernel's CLOCK_MONOTONIC, the one the node
// reads, which is why the harness does not write the file itself.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/lockfault/lockfault/cluster/shimfile"
)

const usage = "usage: lockfault-nodectl clock-offset FILE NS | clock-drift FILE NS | clock-get FILE | power-loss DIR [--dbfilename NAME]"

// maxShift bounds an offset or a drift: a clock moved by more than a year is
// a mistake, not a fault.
const maxShift = 366 * 24 * time.Hour

func main() {
	code, err := run(os.Args[1:], os.Stdout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "lockfault-nodectl: %v\n", err)
	}
	os.Exit(code)
}

// run executes one command and returns the exit status: 0, 1 for a failure,
// 2 for bad usage.
func run(args []string, out io.Writer) (int, error) {
	if len(args) == 0 {
		return 2, fmt.Errorf("no command (%s)", usage)
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "clock-offset", "clock-drift":
		if len(rest) != 2 {
			return 2, fmt.Errorf("%s: want FILE NS, got %d arguments", cmd, len(rest))
		}
		file, err := absolute(cmd, rest[0])
		if err != nil {
			return 2, err
		}
		ns, err := strconv.ParseInt(rest[1], 10, 64)
		if err != nil || time.Duration(ns).Abs() > maxShift {
			return 2, fmt.Errorf("%s: NS %q: not a whole number of nanoseconds within a year (allowed: -%d to %d)", cmd, rest[1], maxShift.Nanoseconds(), maxShift.Nanoseconds())
		}
		if cmd == "clock-offset" {
			err = shimfile.SetOffset(file, time.Duration(ns))
		} else {
			err = shimfile.SetDrift(file, time.Duration(ns))
		}
		if err != nil {
			return 1, err
		}
		return 0, nil
	case "clock-get":
		if len(rest) != 1 {
			return 2, fmt.Errorf("%s: want FILE, got %d arguments", cmd, len(rest))
		}
		file, err := absolute(cmd, rest[0])
		if err != nil {
			return 2, err
		}
		d, err := shimfile.Offset(file)
		if err != nil {
			return 1, err
		}
		fmt.Fprintln(out, d.Nanoseconds())
		return 0, nil
	case "power-loss":
		if len(rest) != 1 && (len(rest) != 3 || rest[1] != "--dbfilename") {
			return 2, fmt.Errorf("%s: want DIR [--dbfilename NAME], got %q", cmd, rest)
		}
		dir, err := absolute(cmd, rest[0])
		if err != nil {
			return 2, err
		}
		rep, err := shimfile.CutToDurable(dir, rest[1:])
		if err != nil {
			return 1, err
		}
		if err := json.NewEncoder(out).Encode(rep); err != nil {
			return 1, err
		}
		return 0, nil
	}
	return 2, fmt.Errorf("unknown command %q (allowed: clock-offset, clock-drift, clock-get, power-loss)", cmd)
}

func absolute(cmd, path string) (string, error) {
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("%s: %q is not an absolute path", cmd, path)
	}
	return filepath.Clean(path), nil
}
