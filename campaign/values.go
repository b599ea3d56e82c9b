package campaign

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Values are a campaign given on the command line instead of a file, as
// `simulate campaign` reads its flags:
//
//	-name nightly -locks single,redlock -worker 'CMD' -worker-lock NAME -worker-known node-clock
//	-properties exclusion,crash -scenarios single-crash -hunt 1:20 -repeat 20
//
// Errors name the flag: "-locks: unknown lock "x" (allowed: ...)".
type Values struct {
	Name string
	// Locks are built-in lock names; Worker an external worker command,
	// with the lock name it declares in WorkerLock (optional) and its
	// known limits in WorkerKnown (optional).
	Locks       []string
	Worker      string
	WorkerLock  string
	WorkerKnown []string
	// Properties are property names or prefixes; Scenarios built-in names
	// or files (relative to the working directory).
	Properties []string
	Scenarios  []string
	// Hunt are seeds: "42" or a range "FROM:COUNT" ("1:20" is seeds 1 to 20).
	Hunt []string
	// HuntSearch is the hunt seeds' search (Registry.Searches; "": the
	// default, random).
	HuntSearch  string
	Repetitions int
}

// FromValues checks command-line values and builds their definition.
func FromValues(v Values, cat Registry) (*Definition, error) {
	b := newBuilder(cat, "")
	if v.Name != "" {
		if err := b.name(v.Name, "-name"); err != nil {
			return nil, err
		}
	}
	if err := b.repetitions(v.Repetitions, "-repeat"); err != nil {
		return nil, err
	}
	if len(v.Locks) > MaxSubjects {
		return nil, errAt("-locks", "%d locks (allowed: at most %d)", len(v.Locks), MaxSubjects)
	}
	for _, l := range v.Locks {
		if err := b.subject(strings.TrimSpace(l), "", "-locks", ""); err != nil {
			return nil, err
		}
	}
	if v.WorkerLock != "" && v.Worker == "" {
		return nil, errAt("-worker-lock", "given without -worker (allowed: the lock name a -worker declares)")
	}
	if len(v.WorkerKnown) > 0 && v.Worker == "" {
		return nil, errAt("-worker-known", "given without -worker (allowed: the known limits of a -worker's lock: %s; a built-in lock's come from its promise table)", b.limitNames())
	}
	if v.Worker != "" {
		if err := b.subject(v.WorkerLock, v.Worker, "-worker-lock", "-worker"); err != nil {
			return nil, err
		}
		if err := b.known(v.WorkerKnown, "-worker-known", func(int) string { return "-worker-known" }); err != nil {
			return nil, err
		}
	}
	for _, p := range v.Properties {
		if err := b.property(p, "", "-properties", ""); err != nil {
			return nil, err
		}
	}
	for _, s := range v.Scenarios {
		if err := b.scenario(s, "", "-scenarios", ""); err != nil {
			return nil, err
		}
	}
	search := ""
	if v.HuntSearch != "" {
		if len(v.Hunt) == 0 {
			return nil, errAt("-hunt-search", "given without -hunt (allowed: the search of the -hunt seeds: %s)", strings.Join(cat.Searches, ", "))
		}
		if !slices.Contains(cat.Searches, v.HuntSearch) {
			return nil, errAt("-hunt-search", "%q (allowed: %s)", v.HuntSearch, strings.Join(cat.Searches, ", "))
		}
		if v.HuntSearch != cat.Searches[0] {
			search = v.HuntSearch
		}
	}
	for _, h := range v.Hunt {
		from, count, err := parseSeeds(h)
		if err != nil {
			return nil, errAt("-hunt", "%v", err)
		}
		if err := b.hunt(from, count, search, "", "-hunt", ""); err != nil {
			return nil, err
		}
	}
	return b.finish("-locks", "-locks", "-properties", "-repeat")
}

// parseSeeds reads "42" or "FROM:COUNT".
func parseSeeds(s string) (from int64, count int, err error) {
	bad := fmt.Errorf("%q (allowed: a seed such as 42, or FROM:COUNT such as 1:20)", s)
	a, c, isRange := strings.Cut(strings.TrimSpace(s), ":")
	if from, err = strconv.ParseInt(a, 10, 64); err != nil {
		return 0, 0, bad
	}
	if !isRange {
		return from, 1, nil
	}
	n, err := strconv.Atoi(c)
	if err != nil {
		return 0, 0, bad
	}
	return from, n, nil
}
