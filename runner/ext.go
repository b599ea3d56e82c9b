package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/lockfault/lockfault/lockimpl"
)

// The published Go lock libraries (redsync, redislock, etcd's Mutex,
// rueidislock, ...) are not linked into lockfault: their adapters live in
// the nested module adapters/ and run as the worker binary lockfault-ext, so that
// lockfault's own go.mod never requires them (a user's module that imports
// lockfaulttest keeps the library versions it pinned). BuiltIn resolves
// their names through that binary.

// EnvExt names the lockfault-ext binary explicitly.
const EnvExt = "LOCKFAULT_EXT"

// extBinary is the file name of the ext worker binary.
const extBinary = "lockfault-ext"

// extListTimeout bounds `lockfault-ext list`.
const extListTimeout = 20 * time.Second

// maxExtList bounds what `lockfault-ext list` may print.
const maxExtList = 1 << 20

// ExtWorker returns the path of the lockfault-ext binary: $LOCKFAULT_EXT,
// else beside this executable, else bin/ of the source tree this package was
// built from (tests); "" when there is none.
func ExtWorker() string {
	if p := os.Getenv(EnvExt); p != "" {
		return p
	}
	var dirs []string
	if self, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Dir(self))
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		dirs = append(dirs, filepath.Join(filepath.Dir(filepath.Dir(file)), "bin"))
	}
	for _, d := range dirs {
		p := filepath.Join(d, extBinary)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

var (
	extMu    sync.Mutex
	extCache = map[string][]lockimpl.Info{}
)

// extInfos lists the locks the ext binary serves (nil when there is none or
// it cannot be listed). The list is asked once per binary.
func extInfos(ctx context.Context) []lockimpl.Info {
	infos, _ := extList(ctx)
	return infos
}

func extList(ctx context.Context) ([]lockimpl.Info, error) {
	path := ExtWorker()
	if path == "" {
		return nil, nil
	}
	extMu.Lock()
	defer extMu.Unlock()
	if infos, ok := extCache[path]; ok {
		return infos, nil
	}
	ctx, cancel := context.WithTimeout(ctx, extListTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "list")
	var out bytes.Buffer
	cmd.Stdout = &limitWriter{w: &out, n: maxExtList}
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s list: %v", path, err)
	}
	var infos []lockimpl.Info
	if err := json.Unmarshal(out.Bytes(), &infos); err != nil {
		return nil, fmt.Errorf("%s list: %v", path, err)
	}
	extCache[path] = infos
	return infos, nil
}

// extSubject resolves a lock name through the ext binary.
func extSubject(ctx context.Context, name string) (Subject, bool, error) {
	infos, err := extList(ctx)
	if err != nil {
		return Subject{}, false, err
	}
	i := slices.IndexFunc(infos, func(i lockimpl.Info) bool { return i.Name == name })
	if i < 0 {
		return Subject{}, false, nil
	}
	return Subject{Info: infos[i], Command: []string{ExtWorker()}, Shipped: true}, true, nil
}

// ExtLocks lists the ext binary's locks (for `simulate list`), or why not.
func ExtLocks(ctx context.Context) ([]lockimpl.Info, error) { return extList(ctx) }

// limitWriter keeps at most n bytes and fails past them.
type limitWriter struct {
	w interface{ Write([]byte) (int, error) }
	n int
}

func (l *limitWriter) Write(b []byte) (int, error) {
	if len(b) > l.n {
		return 0, fmt.Errorf("output longer than its bound")
	}
	l.n -= len(b)
	return l.w.Write(b)
}

func sortedUnique(xs []string) []string {
	slices.Sort(xs)
	return slices.Compact(xs)
}
