package golibs

import (
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/lockfault/lockfault/lockimpl"
)

var (
	ownMu sync.Mutex
	own   []string // the names this package registered, in registration order
)

// register registers a library's lock into lockfault's registry, with
// Info.Version set to the exact version of the library's module as built
// into this binary, and remembers it as one of this package's locks.
func register(info lockimpl.Info, module string, f lockimpl.Factory) {
	info.Version = ModuleVersion(module)
	lockimpl.Register(info, f)
	ownMu.Lock()
	own = append(own, info.Name)
	ownMu.Unlock()
}

// Infos describes the locks this package registered, sorted by name.
func Infos() []lockimpl.Info {
	ownMu.Lock()
	names := slices.Sorted(slices.Values(own))
	ownMu.Unlock()
	out := make([]lockimpl.Info, 0, len(names))
	for _, n := range names {
		if info, ok := lockimpl.Lookup(n); ok {
			out = append(out, info)
		}
	}
	return out
}

// ModuleVersion is "<module path> <version>" of a dependency as recorded in
// this binary's build information (debug.ReadBuildInfo), followed by
// "=> <path> <version>" when the module is replaced; "" when the binary
// carries no build information or does not contain the module.
func ModuleVersion(module string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, d := range bi.Deps {
		if d.Path != module {
			continue
		}
		if r := d.Replace; r != nil {
			return module + " " + d.Version + " => " + strings.TrimSpace(r.Path+" "+r.Version)
		}
		return module + " " + d.Version
	}
	return ""
}
