package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"runtime/debug"
	"sync"
)

var versionOnce = sync.OnceValue(func() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
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
	}
	// No clean revision recorded (a -buildvcs=false build, local changes):
	// the binary itself names the build.
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
})

// Version names this build of lockfault: its VCS revision, or (a build
// without a clean revision) a hash of the binary. A campaign's shards and
// its merge must share it.
func Version() string { return versionOnce() }
