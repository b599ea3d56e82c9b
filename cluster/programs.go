package cluster

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lockfault/lockfault"
)

// debianPackages names the Debian package that provides each program
// lockfault starts: the servers, and the interpreters its example workers
// run under.
var debianPackages = map[string]string{
	"redis-server":   "redis-server",
	"redis-sentinel": "redis-sentinel",
	"etcd":           "etcd-server",
	"python3":        "python3",
	"php":            "php-cli",
}

// DebianPackage is the Debian package that provides program (a name or a
// path: its base name is looked up), or "" when lockfault knows none.
func DebianPackage(program string) string {
	return debianPackages[filepath.Base(program)]
}

// Programs lists the servers a topology's nodes run, in start order.
func (t Topology) Programs() []string {
	switch t.Kind {
	case lockfault.Etcd:
		return []string{"etcd"}
	case lockfault.Replicated:
		if t.Sentinels > 0 {
			return []string{"redis-server", "redis-sentinel"}
		}
	}
	return []string{"redis-server"}
}

// Packages lists the Debian packages that provide programs, each once.
func Packages(programs ...string) []string {
	var out []string
	for _, p := range programs {
		if d := DebianPackage(p); d != "" && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// lookPath finds a program (a variable for tests).
var lookPath = exec.LookPath

// CheckPrograms returns an error naming every program that cannot be found,
// on one line, each with the Debian package that provides it ("redis-sentinel not found:
// install the Debian package redis-sentinel"), or nil when all are there.
func CheckPrograms(programs ...string) error {
	var errs []string
	for _, p := range programs {
		if _, err := lookPath(p); err == nil {
			continue
		}
		if d := DebianPackage(p); d != "" {
			errs = append(errs, fmt.Sprintf("%s not found: install the Debian package %s", p, d))
		} else {
			errs = append(errs, p+" not found")
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errors.New(strings.Join(errs, "; "))
}
