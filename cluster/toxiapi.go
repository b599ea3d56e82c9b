package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The harness's toxiproxy server is the real toxiproxy-server program,
// started once per harness process and driven through toxiproxy's client
// only. It is not linked into the harness: toxiproxy's server package
// brings a metrics library (prometheus) into every binary that links it,
// a user's test binary among them.

// EnvToxiproxy names the toxiproxy-server binary explicitly.
const EnvToxiproxy = "LOCKFAULT_TOXIPROXY"

const (
	toxiBinary     = "toxiproxy-server"
	toxiModule     = "github.com/Shopify/toxiproxy/v2"
	toxiStartWait  = 10 * time.Second // until the server's own listener answers
	toxiBuildWait  = 5 * time.Minute  // go build of the server, when no binary is found
	toxiMaxAttempt = 4                // ports tried when another process took the one picked
	toxiLogTail    = 2000             // bytes of the server's output quoted on failure
)

// toxiServer is the running server: its API address and the channel closed
// when the process is gone.
type toxiServer struct {
	addr    string
	pid     int
	done    chan struct{}
	out     *lockedBuffer
	accepts *acceptLog // the connections its proxies accepted, from its log
}

var (
	toxiMu  sync.Mutex
	toxiCur *toxiServer
)

// toxiproxyServer returns the harness's toxiproxy server, starting it on a
// free loopback port when none runs (again after it died). It dies with the
// harness (Pdeathsig, held by a thread that lives as long as the server),
// so it never outlives the process that started it.
func toxiproxyServer() (*toxiServer, error) {
	toxiMu.Lock()
	defer toxiMu.Unlock()
	if s := toxiCur; s != nil {
		select {
		case <-s.done:
		default:
			return s, nil
		}
	}
	bin, err := ToxiproxyBinary()
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		s, err := startToxiproxy(bin)
		if err == nil {
			toxiCur = s
			return s, nil
		}
		if attempt == toxiMaxAttempt || !errors.Is(err, errPortTaken) {
			return nil, fmt.Errorf("toxiproxy-server (%s): %w", bin, err)
		}
	}
}

// startToxiproxy starts bin on a free loopback port and waits until that
// port is the process's own listener (FreePort closes its probe first:
// another process may take the port in between, and the server exits when
// its bind fails).
func startToxiproxy(bin string) (*toxiServer, error) {
	port, err := FreePort("127.0.0.1")
	if err != nil {
		return nil, err
	}
	s := &toxiServer{addr: "127.0.0.1:" + strconv.Itoa(port), done: make(chan struct{}), out: &lockedBuffer{max: 1 << 16}, accepts: newAcceptLog()}
	cmd := exec.Command(bin, "-host", "127.0.0.1", "-port", strconv.Itoa(port))
	// Its log (on stdout) at level info: a line per accepted connection,
	// which s.accepts counts; warnings and errors are kept for a failure.
	cmd.Stdout, cmd.Stderr = io.MultiWriter(s.out, s.accepts), s.out
	cmd.Env = append(os.Environ(), "LOG_LEVEL=info")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	started := make(chan error, 1)
	go func() {
		// Pdeathsig fires when the thread that started the child ends: this
		// goroutine keeps that thread until the child is gone.
		runtime.LockOSThread()
		defer close(s.done)
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		cmd.Wait()
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	s.pid = cmd.Process.Pid
	ctx, cancel := context.WithTimeout(context.Background(), toxiStartWait)
	defer cancel()
	err = WaitListening(ctx, s.addr, s.done, toxiStartWait)
	if err == nil {
		err = waitOwnListener(ctx, s.pid, port, s.done, toxiStartWait)
	}
	if err != nil {
		cmd.Process.Kill()
		<-s.done
		log := s.out.Bytes()
		if portTakenLog(log) {
			err = fmt.Errorf("%w: %v", errPortTaken, err)
		}
		return nil, fmt.Errorf("did not come up on %s: %w\n%s", s.addr, err, Tail(log, toxiLogTail))
	}
	return s, nil
}

// ToxiproxyBinary finds the toxiproxy-server program: $LOCKFAULT_TOXIPROXY,
// else beside this executable (bin/, where make simulate builds it), else
// bin/ of the module roots shimDirs names, else on PATH; else it builds the
// version of toxiproxy lockfault's go.mod requires with go build into the
// user's cache directory, once.
func ToxiproxyBinary() (string, error) {
	if p := os.Getenv(EnvToxiproxy); p != "" {
		if !isExecutable(p) {
			return "", fmt.Errorf("%s=%s: not an executable file", EnvToxiproxy, p)
		}
		return p, nil
	}
	var dirs []string
	if self, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Dir(self))
	}
	for _, d := range ShimDirs() {
		dirs = append(dirs, filepath.Join(d, "bin"))
	}
	for _, d := range dirs {
		if p := filepath.Join(d, toxiBinary); isExecutable(p) {
			return p, nil
		}
	}
	if p, err := exec.LookPath(toxiBinary); err == nil {
		return p, nil
	}
	return buildToxiproxy()
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

var toxiBuild struct {
	sync.Mutex
	path string
}

// buildToxiproxy builds toxiproxy-server from lockfault's own module (its
// go.mod pins the version) into the user's cache directory, named by that
// version, and reuses it afterwards. The file appears whole (renamed into
// place), so concurrent test binaries at most build it twice.
func buildToxiproxy() (string, error) {
	toxiBuild.Lock()
	defer toxiBuild.Unlock()
	if toxiBuild.path != "" {
		return toxiBuild.path, nil
	}
	_, file, _, ok := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(file)) // .../cluster/toxiapi.go -> the module root
	if !ok || !filepath.IsAbs(file) {
		return "", fmt.Errorf("%s not found (set %s, or run `make simulate`, which builds bin/%s)", toxiBinary, EnvToxiproxy, toxiBinary)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("%s not found and no cache directory to build it in (%v): set %s", toxiBinary, err, EnvToxiproxy)
	}
	out := filepath.Join(cache, "lockfault", toxiBinary+"-"+toxiVersion(root))
	if isExecutable(out) {
		toxiBuild.path = out
		return out, nil
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", err
	}
	tmp := fmt.Sprintf("%s.%d.tmp", out, os.Getpid())
	ctx, cancel := context.WithTimeout(context.Background(), toxiBuildWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", tmp, toxiModule+"/cmd/server")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var msg bytes.Buffer
	cmd.Stdout, cmd.Stderr = &msg, &msg
	if err := cmd.Run(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("%s not found (set %s, or run `make simulate`), and go build of it in %s failed: %v\n%s", toxiBinary, EnvToxiproxy, root, err, Tail(msg.Bytes(), toxiLogTail))
	}
	if err := os.Rename(tmp, out); err != nil {
		os.Remove(tmp)
		return "", err
	}
	toxiBuild.path = out
	return out, nil
}

// toxiVersion is the version of toxiproxy the go.mod in root requires
// (the server is built from it), "unknown" when it names none.
func toxiVersion(root string) string {
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == toxiModule && semverish(f[1]) {
			return f[1]
		}
	}
	return "unknown"
}

// semverish: a module version usable in a file name (v1.2.3, no slashes).
func semverish(v string) bool {
	return strings.HasPrefix(v, "v") && len(v) <= 64 && !strings.ContainsAny(v, "/\\ ")
}

// lockedBuffer keeps the first max bytes a process writes.
type lockedBuffer struct {
	mu  sync.Mutex
	b   bytes.Buffer
	max int
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := l.max - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (l *lockedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.b.Bytes())
}
