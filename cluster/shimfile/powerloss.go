package shimfile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// File is what a power loss did to one file.
type File struct {
	Path   string // relative to the node's data directory
	Before int64  // size in the page cache when the power went
	Kept   int64  // size on "disk": what the fsync log says was durable
	Lost   int64  // Before - Kept
	Synced bool   // whether any fsync of the file was recorded
}

// Report says what a power loss cost a node.
type Report struct {
	Node  string
	Files []File
	Lost  int64 // bytes, over all files
}

func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "power loss on %s: %d bytes lost", r.Node, r.Lost)
	for _, f := range r.Files {
		fmt.Fprintf(&b, "\n  %s: %d -> %d (lost %d, synced %v)", f.Path, f.Before, f.Kept, f.Lost, f.Synced)
	}
	return b.String()
}

// maxFsyncLog bounds the fsync log read: a line per fsync, rename or
// truncation of a persistence file over one run.
const maxFsyncLog = 256 << 20

// CutToDurable cuts each persistence file of the data directory dir (of a
// node that is dead, with every process it forked) back to what the shim's
// fsync log says was made durable, then rewrites the log to record every
// surviving file as durable at its kept size. args are the node's
// command-line arguments (for --dbfilename). The model is described at
// cluster.PowerLoss. The report's Node is left empty.
func CutToDurable(dir string, args []string) (Report, error) {
	var rep Report
	dir, err := filepath.EvalSymlinks(dir) // the shim logs paths as the kernel resolves them
	if err != nil {
		return rep, err
	}
	logPath := filepath.Join(dir, FsyncLogName)
	files, err := persistenceFiles(dir, args)
	if err != nil {
		return rep, err
	}
	raw, err := readBounded(logPath, maxFsyncLog)
	if errors.Is(err, fs.ErrNotExist) && len(files) > 0 {
		// The shim creates the log when it starts: without one, nothing says
		// what was durable, and cutting everything to zero would be a lie.
		return rep, fmt.Errorf("no fsync log %s (did the node run under the clock shim with this data directory?)", logPath)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return rep, err
	}
	durable := ParseFsyncLog(raw)

	var baseline bytes.Buffer
	for _, rel := range files {
		path := filepath.Join(dir, rel)
		st, err := os.Stat(path)
		if err != nil {
			return rep, err
		}
		f := File{Path: rel, Before: st.Size()}
		if d, ok := durable[path]; ok {
			f.Synced = true
			f.Kept = min(d, f.Before)
		}
		f.Lost = f.Before - f.Kept
		if f.Lost > 0 {
			if err := os.Truncate(path, f.Kept); err != nil {
				return rep, err
			}
		}
		rep.Files = append(rep.Files, f)
		rep.Lost += f.Lost
		fmt.Fprintf(&baseline, "F %d %s\n", f.Kept, path)
	}
	if err := os.WriteFile(logPath, baseline.Bytes(), 0o644); err != nil {
		return rep, err
	}
	return rep, nil
}

// readBounded reads a whole file of at most limit bytes.
func readBounded(path string, limit int64) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d allowed", path, st.Size(), limit)
	}
	return os.ReadFile(path)
}

// persistenceFiles lists, relative to dir, the files a power loss acts on:
// those in dir and its direct subdirectories named *.aof, *.rdb or
// *.manifest, plus any --dbfilename.
func persistenceFiles(dir string, args []string) ([]string, error) {
	extra := map[string]bool{}
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--dbfilename" && args[i+1] != "" {
			extra[filepath.Base(args[i+1])] = true
		}
	}
	isPersistence := func(name string) bool {
		return extra[name] || strings.HasSuffix(name, ".aof") || strings.HasSuffix(name, ".rdb") || strings.HasSuffix(name, ".manifest")
	}
	var out []string
	top, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range top {
		switch {
		case e.Type().IsRegular() && isPersistence(e.Name()):
			out = append(out, e.Name())
		case e.IsDir():
			sub, err := os.ReadDir(filepath.Join(dir, e.Name()))
			if err != nil {
				return nil, err
			}
			for _, s := range sub {
				if s.Type().IsRegular() && isPersistence(s.Name()) {
					out = append(out, filepath.Join(e.Name(), s.Name()))
				}
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// ParseFsyncLog replays the shim's log (format in clockshim.c) into the
// durable size of each path. A torn last line (the writer was killed) is
// ignored.
func ParseFsyncLog(raw []byte) map[string]int64 {
	durable := map[string]int64{}
	raw = raw[:bytes.LastIndexByte(raw, '\n')+1] // drop a torn last line
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if len(line) < 3 || line[1] != ' ' {
			continue
		}
		rest := line[2:]
		switch line[0] {
		case 'F', 'T':
			sizeStr, path, ok := strings.Cut(rest, " ")
			size, err := strconv.ParseInt(sizeStr, 10, 64)
			if !ok || err != nil {
				continue
			}
			d, had := durable[path]
			if line[0] == 'F' {
				// Synced up to size: sizes only grow between truncations,
				// and two syncs of one file may log out of order.
				durable[path] = max(d, size)
			} else if had && size < d {
				// Cut below what was durable: the cut part is gone.
				durable[path] = size
			}
		case 'R':
			oldPath, newPath, ok := strings.Cut(rest, "\t")
			if !ok {
				continue
			}
			if d, had := durable[oldPath]; had {
				durable[newPath] = d
			} else {
				delete(durable, newPath)
			}
			delete(durable, oldPath)
		case 'U':
			delete(durable, rest)
		}
	}
	return durable
}
