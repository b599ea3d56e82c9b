package examples

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The connect remap (faults/clockshim/connectremap.c) under PHP's own
// streams (a nonblocking connect with a timeout, as phpredis's): a connect
// to a mapped address reaches the mapped one, any other address is dialled
// as it is, and a malformed map fails every IPv4 connect, saying why,
// rather than being used in part.
func TestConnectRemapUnderPHPStreams(t *testing.T) {
	buildShims(t)
	lib, err := filepath.Abs("../faults/clockshim/libconnectremap.so")
	if err != nil {
		t.Fatal(err)
	}
	target, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	other, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	// An address nothing listens on: a port just freed.
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nowhere := l.Addr().String()
	l.Close()
	accepted := func(l net.Listener) bool {
		l.(*net.TCPListener).SetDeadline(time.Now().Add(2 * time.Second))
		c, err := l.Accept()
		if err != nil {
			return false
		}
		c.Close()
		return true
	}
	// One connect: prints "ok" or the stream's error.
	script := `$c = @stream_socket_client("tcp://" . $argv[1], $en, $es, 2.0); echo $c === false ? "error: $es" : "ok";`
	for _, c := range []struct {
		name, remap, dial string
		want              string // "ok" or a part of the error
		reaches           net.Listener
		stderr            string
	}{
		{"mapped", "127.0.0.1:1=127.0.0.1:2," + nowhere + "=" + target.Addr().String(), nowhere, "ok", target, ""},
		{"not in the map", nowhere + "=" + target.Addr().String(), other.Addr().String(), "ok", other, ""},
		{"no map", "", other.Addr().String(), "ok", other, ""},
		{"malformed", nowhere + "=" + target.Addr().String() + ",127.0.0.1:9=localhost:9", nowhere, "Invalid argument", nil, "(entry 2)"},
		{"malformed, another address", "127.0.0.01:9=127.0.0.1:9", other.Addr().String(), "Invalid argument", nil, "(entry 1)"},
		{"mapped twice", nowhere + "=" + target.Addr().String() + "," + nowhere + "=" + other.Addr().String(), nowhere, "Invalid argument", nil, "mapped twice"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command("/usr/bin/php", "-r", script, c.dial)
			cmd.Env = append(os.Environ(), "LD_PRELOAD="+lib, "LOCKFAULT_CONNECT_REMAP="+c.remap)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("php: %v (%s)", err, stderr.String())
			}
			if !strings.Contains(string(out), c.want) {
				t.Fatalf("connect to %s with LOCKFAULT_CONNECT_REMAP=%s: %s, want %s", c.dial, c.remap, out, c.want)
			}
			if c.reaches != nil && !accepted(c.reaches) {
				t.Fatalf("connect to %s: ok, but %s accepted nothing", c.dial, c.reaches.Addr())
			}
			if !strings.Contains(stderr.String(), c.stderr) {
				t.Fatalf("stderr %q, want it to say %q", stderr.String(), c.stderr)
			}
		})
	}
}

// A PHP cluster worker whose connect remap is not loaded (not built beside
// the clock shim) refuses its cluster endpoints (not-supported) at init,
// saying why, and so does one given an address the remap cannot map or a
// map the remap would refuse (an address twice).
func TestPHPClusterWorkerRefusesWithoutTheRemap(t *testing.T) {
	buildShims(t)
	dir := t.TempDir()
	b, err := os.ReadFile("../faults/clockshim/libclockshim.so")
	if err != nil {
		t.Fatal(err)
	}
	alone := filepath.Join(dir, "libclockshim.so") // no libconnectremap.so beside it
	if err := os.WriteFile(alone, b, 0o755); err != nil {
		t.Fatal(err)
	}
	both, err := filepath.Abs("../faults/clockshim/libclockshim.so")
	if err != nil {
		t.Fatal(err)
	}
	ok := `{"127.0.0.1:7001":"127.0.0.1:8001"}`
	for _, c := range []struct {
		shim, remap, code, want string
	}{
		{alone, ok, "not-supported", "libconnectremap.so"},
		{both, `{"127.0.0.1:7001":"localhost:8001"}`, "not-supported", "not an IPv4 address"},
		{both, `{"127.0.0.1:7001":"127.0.0.1:8001","127.0.0.1:07001":"127.0.0.1:8002"}`, "malformed", "mapped twice"},
	} {
		t.Setenv("LOCKFAULT_CLOCK_SHIM", c.shim)
		for _, w := range clusterWorkers {
			if w.argv[0] != "/usr/bin/php" {
				continue
			}
			send, recv := session(t, w.argv)
			send(fmt.Sprintf(`{"cmd":"init","client":"c1","endpoints":{"cluster":["127.0.0.1:8001"],"cluster_remap":%s},"resource":"127.0.0.1:9"}`, c.remap))
			m := recv()
			if m.Type != "error" || m.Code != c.code || !strings.Contains(m.Error, c.want) {
				t.Errorf("%s under %s, remap %s: %+v, want a %s error saying %s", w.argv[1], c.shim, c.remap, m, c.code, c.want)
			}
		}
	}
}
