package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"runtime/debug"
	"sync"
)

// revision is the commit the Makefile stamps into a build from a clean
// tree (-ldflags -X github.com/lockfault/lockfault/runner.revision=…),
// for a Go whose settings record no VCS stamp (GOFLAGS=-buildvcs=false,
// as on this project's machine): without it, two machines that build one
// commit in different folders name it by two binary hashes, and their
// campaign shards refuse to merge.
var revision string

var versionOnce = sync.OnceValue(func() string { return versionOf(readBuildInfo(), revision, selfHash) })

func readBuildInfo() *debug.BuildInfo {
	bi, _ := debug.ReadBuildInfo()
	return bi
}

// versionOf names a build: Go's own VCS stamp of a clean tree, else the
// stamped revision, else (local changes, or neither) the binary's hash.
func versionOf(bi *debug.BuildInfo, stamped string, hash func() string) string {
	if bi != nil {
		var rev, dirty string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "+dirty"
				}
			}
		}
		if rev != "" && dirty == "" {
			return "lockfault " + rev
		}
		if rev != "" {
			// Go saw local changes: a stamp from the Makefile would be wrong too.
			return hash()
		}
	}
	if validRevision(stamped) {
		return "lockfault " + stamped
	}
	return hash()
}

// validRevision: a full hexadecimal commit name (SHA-1 or SHA-256).
func validRevision(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// selfHash names the build by a hash of the binary itself.
func selfHash() string {
	self, err := os.Executable()
	if err != nil {
		return "lockfault (unknown build)"
	}
	f, err := os.Open(self)
	if err != nil {
		return "lockfault (unknown build)"
	}
	defer f.Close()
	h := sha256.New()
	io.Copy(h, f)
	return "lockfault build " + hex.EncodeToString(h.Sum(nil))[:16]
}

// Version names this build of lockfault: its VCS revision (Go's stamp, or
// the Makefile's of a clean tree), or (local changes) a hash of the binary. A campaign's shards and
// its merge must share it.
func Version() string { return versionOnce() }
