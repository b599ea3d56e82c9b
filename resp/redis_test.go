package resp

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// waitLimit bounds every wait for something to happen in these tests; it
// is a bound, never an expected duration.
const waitLimit = 20 * time.Second

// startRedis starts a real redis-server on a free loopback port (no
// persistence) and stops it by its recorded pid when the test ends.
func startRedis(tb testing.TB) string {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		tb.Skip("redis-server is not installed")
	}
	for range 3 { // a port found free may be taken before the server binds it
		port := freePort(tb)
		dir := tb.TempDir()
		cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", dir, "--logfile", filepath.Join(dir, "redis.log"), "--daemonize", "no")
		if err := cmd.Start(); err != nil {
			tb.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		tb.Cleanup(func() {
			cmd.Process.Kill() // by the pid Start recorded
			<-exited
		})
		addr := net.JoinHostPort("127.0.0.1", port)
		if answers(addr, exited) {
			return addr
		}
	}
	tb.Fatal("redis-server did not start")
	return ""
}

func freePort(tb testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// answers waits until the server at addr answers PING (false if it exited
// or waitLimit passed).
func answers(addr string, exited <-chan struct{}) bool {
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.SetDeadline(time.Now().Add(time.Second))
			c.Write([]byte("PING\r\n"))
			line, _ := bufio.NewReader(c).ReadString('\n')
			c.Close()
			if strings.HasPrefix(line, "+PONG") {
				return true
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// newTap starts a tap closed when the test ends.
func newTap(tb testing.TB, reg *Registry, client, node, upstream string) *Tap {
	tb.Helper()
	tap, err := Listen(reg, client, node, upstream)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { tap.Close() })
	return tap
}

// newClient is a go-redis client on addr speaking RESP proto, without
// retries (a retry would hide what the tap did), closed when the test ends.
func newClient(tb testing.TB, addr string, proto int) *redis.Client {
	tb.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: proto, MaxRetries: -1,
		DisableIdentity: true, ReadTimeout: waitLimit, WriteTimeout: waitLimit})
	tb.Cleanup(func() { c.Close() })
	return c
}

// ctxT is a context bounded by waitLimit.
func ctxT(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	tb.Cleanup(cancel)
	return ctx
}

// released waits for a trigger's release.
func released(tb testing.TB, a *Armed) Release {
	tb.Helper()
	select {
	case rel := <-a.Released():
		return rel
	case <-time.After(waitLimit):
		tb.Fatalf("trigger did not fire within %v (matched %d)", waitLimit, a.Matched())
		return Release{}
	}
}

// notFired reports an error if the trigger fired.
func notFired(tb testing.TB, a *Armed) {
	tb.Helper()
	select {
	case rel := <-a.Released():
		tb.Errorf("trigger fired on %s (reply %v)", rel.Command, rel.Reply)
	default:
	}
}

func arm(tb testing.TB, reg *Registry, t Trigger) *Armed {
	tb.Helper()
	a, err := reg.Arm(t)
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

// rawConn is a plain TCP connection reading with a deadline.
type rawConn struct {
	net.Conn
	r *bufio.Reader
}

func dialRaw(tb testing.TB, addr string) *rawConn {
	tb.Helper()
	c, err := net.DialTimeout("tcp", addr, waitLimit)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(waitLimit))
	return &rawConn{Conn: c, r: bufio.NewReader(c)}
}

// readReplies reads n whole replies (pushes aside) and returns their bytes.
func (c *rawConn) readReplies(tb testing.TB, n int) []byte {
	tb.Helper()
	out, err := c.replies(n)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// replies is readReplies for goroutines other than the test's.
func (c *rawConn) replies(n int) ([]byte, error) {
	var p ReplyParser
	var out []byte
	buf := make([]byte, 4096)
	for n > 0 {
		k, err := c.r.Read(buf)
		if err != nil {
			return out, fmt.Errorf("reading replies (%d to go): %v; got %q", n, err, clip(out))
		}
		chunk := buf[:k]
		out = append(out, chunk...)
		for len(chunk) > 0 {
			used, r, err := p.Feed(chunk)
			if err != nil {
				return out, fmt.Errorf("replies: %v", err)
			}
			chunk = chunk[used:]
			if r != nil && r.Kind != KindPush {
				n--
			}
		}
	}
	return out, nil
}
