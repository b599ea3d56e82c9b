package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockfault/lockfault/internal/gobuild"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/worker"
)

// TestMain lets the test binary stand in for lockfault-ext as a worker.
func TestMain(m *testing.M) {
	if worker.IsWorker() {
		worker.Main()
	}
	os.Exit(m.Run())
}

// modules are the libraries' module paths, by lock name.
var modules = map[string]string{
	"etcd":                "go.etcd.io/etcd/client/v3",
	"go-zero":             "github.com/zeromicro/go-zero",
	"gocron-redis-lock":   "github.com/go-co-op/gocron-redis-lock/v2",
	"redislock":           "github.com/bsm/redislock",
	"redislock-cluster":   "github.com/bsm/redislock",
	"redsync":             "github.com/go-redsync/redsync/v4",
	"redsync-cluster":     "github.com/go-redsync/redsync/v4",
	"rueidislock":         "github.com/redis/rueidis",
	"rueidislock-cluster": "github.com/redis/rueidis",
}

// list prints every ext lock with its library's exact module version.
// A test binary carries no dependency versions, so the real binary is
// built.
func TestListDeclaresEveryLockWithItsModuleVersion(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "lockfault-ext")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "go", gobuild.Args(".", "-o", bin, ".")...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.CommandContext(ctx, bin, "list").Output()
	if err != nil {
		t.Fatalf("lockfault-ext list: %v", err)
	}
	var infos []lockimpl.Info
	if err := json.Unmarshal(out, &infos); err != nil {
		t.Fatalf("list is not a JSON array of lock descriptions: %v\n%s", err, out)
	}
	var names []string
	for _, in := range infos {
		names = append(names, in.Name)
		mod, ok := modules[in.Name]
		if !ok {
			t.Errorf("unexpected lock %s", in.Name)
			continue
		}
		rest, ok := strings.CutPrefix(in.Version, mod+" v")
		if !ok || rest == "" || strings.ContainsAny(rest, " =") {
			t.Errorf("%s: version %q, want %q followed by its exact version", in.Name, in.Version, mod+" v")
		}
		if in.Needs == "" || in.Promises == "" || in.Source == "" {
			t.Errorf("%s: incomplete description %+v", in.Name, in)
		}
	}
	if want := slices.Sorted(func(yield func(string) bool) {
		for n := range modules {
			if !yield(n) {
				return
			}
		}
	}); !slices.Equal(names, want) {
		t.Errorf("list names %v, want %v", names, want)
	}
}

func TestBadCommandLine(t *testing.T) {
	for _, args := range [][]string{nil, {"lst"}, {"list", "x"}} {
		var out, errs bytes.Buffer
		if code := run(args, &out, &errs); code != 2 || out.Len() != 0 || !strings.Contains(errs.String(), "usage") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and the usage on stderr", args, code, out.String(), errs.String())
		}
	}
}

// go-zero logs its failures; they must reach stderr, never the protocol's
// stdout. The worker acquires against a closed port: go-zero logs the
// error, and every stdout line must still be a protocol message.
func TestLibraryLogsStayOffTheProtocol(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0])
	cmd.Env = append(os.Environ(), worker.EnvRole+"=worker")
	cmd.Stdin = strings.NewReader(`{"cmd":"init","client":"c1","lock":"go-zero","endpoints":{"primary":"` + closed + `"},"resource":"` + closed + `"}
{"cmd":"acquire","op":1,"key":"k","ttl_ms":1000}
{"cmd":"shutdown"}
`)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("worker: %v\nstderr: %s", err, stderr.String())
	}
	var types []string
	for i, line := range strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n") {
		m, err := worker.DecodeMessage([]byte(line))
		if err != nil {
			t.Fatalf("stdout line %d is not a protocol message (%v): %q", i+1, err, line)
		}
		types = append(types, m.Type+"/"+m.Status)
	}
	if !slices.Equal(types, []string{"ready/", "reply/info"}) {
		t.Errorf("messages %v, want ready and an acquire whose outcome is unknown", types)
	}
	if !strings.Contains(stderr.String(), "Error on acquiring lock") {
		t.Errorf("go-zero's error log is not on stderr (so the check above proved nothing): %q", stderr.String())
	}
}
