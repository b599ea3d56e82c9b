package cluster

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/lockfault/lockfault"
)

// TestCheckProgramsNamesThePackage: a missing server or interpreter is
// named with the Debian package that provides it, every missing one in one
// error, and nothing is said of those found.
func TestCheckProgramsNamesThePackage(t *testing.T) {
	defer func(f func(string) (string, error)) { lookPath = f }(lookPath)
	lookPath = func(p string) (string, error) {
		if p == "redis-server" {
			return "/usr/bin/redis-server", nil
		}
		return "", exec.ErrNotFound
	}
	err := CheckPrograms("redis-server", "redis-sentinel", "/usr/bin/php", "etcd", "lua")
	if err == nil {
		t.Fatal("no error with redis-sentinel, php, etcd and lua missing")
	}
	want := []string{
		"redis-sentinel not found: install the Debian package redis-sentinel",
		"/usr/bin/php not found: install the Debian package php-cli",
		"etcd not found: install the Debian package etcd-server",
		"lua not found",
	}
	if got := strings.Split(err.Error(), "; "); !slices.Equal(got, want) {
		t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	lookPath = func(string) (string, error) { return "/x", nil }
	if err := CheckPrograms("redis-server", "etcd"); err != nil {
		t.Errorf("everything found: %v", err)
	}
}

// TestTopologyPackages: each topology needs the servers it starts, no more.
func TestTopologyPackages(t *testing.T) {
	for _, c := range []struct {
		topo Topology
		want []string
	}{
		{Topology{Kind: lockfault.Standalone}, []string{"redis-server"}},
		{Topology{Kind: lockfault.Masters, Masters: 5}, []string{"redis-server"}},
		{Topology{Kind: lockfault.Replicated, Replicas: 1}, []string{"redis-server"}},
		{Topology{Kind: lockfault.Replicated, Replicas: 2, Sentinels: 3}, []string{"redis-server", "redis-sentinel"}},
		{Topology{Kind: lockfault.Etcd}, []string{"etcd-server"}},
	} {
		if got := Packages(c.topo.Programs()...); !slices.Equal(got, c.want) {
			t.Errorf("%+v: %v, want %v", c.topo, got, c.want)
		}
	}
	if got := Packages("/usr/bin/python3", "php", "node"); !slices.Equal(got, []string{"python3", "php-cli"}) {
		t.Errorf("interpreters: %v", got)
	}
}
