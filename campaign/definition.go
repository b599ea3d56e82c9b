// Package campaign turns single runs into rates: a campaign is a set of
// subjects (locks) × items (suite properties, scenarios, hunt seeds) ×
// repetitions, enumerated into runs with stable identities, split into
// shards that any machine computes alike, run through an Executor that
// appends one JSON line per run, and merged back into cells ("held 19/20")
// with a 95 % Wilson interval, a cards table, junit.xml and a baseline
// hook. It knows nothing of how a run is made (that is the Executor, which
// the command line implements with runner) and imports none of lockfault's
// run packages, so reports can read its files.
package campaign

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Bounds of a definition. Every count and size a definition or a results
// file can hold is bounded by one of these.
const (
	MaxFileSize    = 256 << 10 // a definition file, in bytes
	MaxSubjects    = 32
	MaxItems       = 512 // after prefixes and seed ranges are expanded
	MaxRepetitions = 1000
	MaxCells       = 4096   // subjects × items
	MaxRuns        = 100000 // subjects × items × repetitions
	MaxHuntSeeds   = 1000   // seeds of one hunt range
	MaxCommandLen  = 1024   // a worker command, in bytes
	MaxNameLen     = 128    // a campaign, lock, property or scenario name
	MaxKnown       = 32     // known limits of one worker subject (the catalog's names bound them first)
)

// ItemKind is what an item runs.
type ItemKind string

// The item kinds.
const (
	// KindProperty is a property of the suite, run as `simulate suite`
	// runs it (a lock that does not claim it gives not-claimed).
	KindProperty ItemKind = "property"
	// KindScenario is a scenario: a built-in name, or a file given
	// relative to the definition's folder.
	KindScenario ItemKind = "scenario"
	// KindHunt is one seed of the hunt's schedule generator.
	KindHunt ItemKind = "hunt"
)

// ItemKinds lists the kinds, in the order a definition lists them.
var ItemKinds = []ItemKind{KindProperty, KindScenario, KindHunt}

// Subject is a lock under test: a built-in lock, or an external worker
// command with the lock name it should declare (optional) and its known
// limits (optional).
type Subject struct {
	Lock   string `json:"lock,omitempty"`
	Worker string `json:"worker,omitempty"`
	// Known are a worker subject's known limits, sorted (Registry.Limits'
	// names, as `simulate hunt -known` takes them): its hunt items never
	// draw their faults. A built-in lock has none here: its come from the
	// promise table. They are part of the definition hash, not of a run's
	// identity (Key).
	Known []string `json:"known,omitempty"`
	// Expect overrides the expected outcome of this subject's cells, by
	// item key ("property:failover/sentinel", "scenario:single-crash").
	Expect map[string]Outcome `json:"expect,omitempty"`
	pos    string
}

// Key is the subject's part of a run's identity: "lock=single",
// "worker=python3 w.py" or "worker=python3 w.py lock=redis-py".
func (s Subject) Key() string {
	switch {
	case s.Worker == "":
		return "lock=" + s.Lock
	case s.Lock == "":
		return "worker=" + s.Worker
	}
	return "worker=" + s.Worker + " lock=" + s.Lock
}

// Label is the subject as a table header names it: the lock name, or the
// worker command for a worker without one.
func (s Subject) Label() string {
	if s.Lock != "" {
		return s.Lock
	}
	return s.Worker
}

// Item is one thing each subject is run on.
type Item struct {
	Kind ItemKind `json:"kind"`
	// Name is the property name, the scenario name or file (relative to
	// the definition's folder, with forward slashes), or the hunt seed in
	// decimal.
	Name string `json:"name"`
	// Search is a hunt item's search (Registry.Searches: "learn",
	// "learn-plain"); "" is the default, the random search.
	Search string `json:"search,omitempty"`
	// Expect overrides the expected outcome of this item for every subject.
	Expect Outcome `json:"expect,omitempty"`
	// FileSHA256 is the content hash of a scenario file, so that two
	// machines with different files do not merge as one campaign.
	FileSHA256 string `json:"file_sha256,omitempty"`
	// Path is a scenario file's path on this machine (not serialised).
	Path string `json:"-"`
	pos  string
}

// Key is the item's part of a run's identity: "property:exclusion/no-faults",
// "scenario:single-crash", "hunt:42" (the random search), "hunt:42@learn".
func (it Item) Key() string {
	if it.Search != "" {
		return string(it.Kind) + ":" + it.Name + "@" + it.Search
	}
	return string(it.Kind) + ":" + it.Name
}

// RunItem is the item as results and cells name it: its kind, and its key
// after the kind ("42@learn" for a hunt seed with a search other than the
// default), so two searches of one seed are two items there too.
func (it Item) RunItem() RunItem {
	return RunItem{Kind: it.Kind, Name: strings.TrimPrefix(it.Key(), string(it.Kind)+":")}
}

// Seed is a hunt item's seed.
func (it Item) Seed() int64 {
	n, _ := strconv.ParseInt(it.Name, 10, 64)
	return n
}

// Definition is a campaign: every subject runs every item, Repetitions
// times.
type Definition struct {
	Name        string    `json:"name"`
	Repetitions int       `json:"repetitions"`
	Subjects    []Subject `json:"subjects"`
	Items       []Item    `json:"items"`
	// Promises are the promise table's expectations for built-in locks,
	// lock → property → outcome, only where it is not held.
	Promises map[string]map[string]Outcome `json:"promises,omitempty"`
	// File is where the definition was read from ("" from flags).
	File string `json:"-"`
	// Version is lockfault's version string, set by the caller: it is
	// part of the definition hash, so results of two versions never merge.
	Version string `json:"-"`
}

// Runs is how many runs the whole campaign has.
func (d *Definition) Runs() int { return len(d.Subjects) * len(d.Items) * d.Repetitions }

// Canonical is the definition in one stable form: subjects sorted by key
// and items by kind and name, as JSON. Two definitions with the same canonical form are
// the same campaign, whatever their order or comments.
func (d *Definition) Canonical() []byte {
	c := *d
	c.Subjects = slices.Clone(d.Subjects)
	c.Items = slices.Clone(d.Items)
	for i, s := range c.Subjects {
		if len(s.Known) > 0 {
			c.Subjects[i].Known = slices.Sorted(slices.Values(s.Known))
		}
	}
	slices.SortFunc(c.Subjects, func(a, b Subject) int { return strings.Compare(a.Key(), b.Key()) })
	slices.SortFunc(c.Items, compareItems)
	data, err := json.Marshal(c)
	if err != nil {
		panic("campaign: canonical form: " + err.Error()) // only strings, ints and maps of them
	}
	return data
}

// Hash is the definition hash: sha256 over the canonical form and
// lockfault's version string (d.Version), "sha256:" and 64 hex digits.
// Results of different hashes are never merged.
func (d *Definition) Hash() string {
	h := sha256.New()
	h.Write(d.Canonical())
	h.Write([]byte("\nlockfault " + d.Version + "\n"))
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// compareItems orders items by kind (properties, scenarios, seeds), then
// name (seeds by number).
func compareItems(a, b Item) int {
	if a.Kind != b.Kind {
		return slices.Index(ItemKinds, a.Kind) - slices.Index(ItemKinds, b.Kind)
	}
	if a.Kind == KindHunt && len(a.Name) != len(b.Name) {
		return len(a.Name) - len(b.Name)
	}
	return strings.Compare(a.Name, b.Name)
}

// ShortHash is a hash as tables show it (its first 12 hex digits).
func ShortHash(h string) string {
	h = strings.TrimPrefix(h, "sha256:")
	return h[:min(12, len(h))]
}

// DecodeCanonical reads a definition back from its canonical form (as a
// shard's manifest stores it) and checks its bounds.
func DecodeCanonical(data []byte) (*Definition, error) {
	var d Definition
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("definition: %v", err)
	}
	switch {
	case len(d.Subjects) < 1 || len(d.Subjects) > MaxSubjects:
		return nil, fmt.Errorf("definition: %d subjects (allowed: 1 to %d)", len(d.Subjects), MaxSubjects)
	case len(d.Items) < 1 || len(d.Items) > MaxItems:
		return nil, fmt.Errorf("definition: %d items (allowed: 1 to %d)", len(d.Items), MaxItems)
	case d.Repetitions < 1 || d.Repetitions > MaxRepetitions:
		return nil, fmt.Errorf("definition: repetitions %d (allowed: 1 to %d)", d.Repetitions, MaxRepetitions)
	case d.Runs() > MaxRuns:
		return nil, fmt.Errorf("definition: %d runs (allowed: at most %d)", d.Runs(), MaxRuns)
	}
	for i, s := range d.Subjects {
		switch {
		case len(s.Known) > 0 && s.Worker == "":
			return nil, fmt.Errorf("definition: subjects.%d.known: lock %s is built in (allowed: known limits on a worker subject)", i, s.Lock)
		case len(s.Known) > MaxKnown:
			return nil, fmt.Errorf("definition: subjects.%d.known: %d entries (allowed: at most %d)", i, len(s.Known), MaxKnown)
		}
	}
	return &d, nil
}

// Expectation is the outcome a cell is expected to show, and where that
// expectation comes from.
type Expectation struct {
	Outcome Outcome `json:"outcome"`
	// Source: "definition" (the item's or the subject's expect), "promise
	// table" (a built-in lock's entry), or "default" (held for a
	// property or a seed, matched for a scenario).
	Source string `json:"source"`
}

// The sources of an expectation.
const (
	SourceDefinition = "definition"
	SourcePromise    = "promise table"
	SourceDefault    = "default"
)

// Expect is the expectation of one cell: the subject's expect for the item,
// else the item's, else the promise table's for a built-in lock and a
// property, else the default.
func (d *Definition) Expect(s Subject, it Item) Expectation {
	if o, ok := s.Expect[it.Key()]; ok {
		return Expectation{o, SourceDefinition}
	}
	if it.Expect != "" {
		return Expectation{it.Expect, SourceDefinition}
	}
	if it.Kind == KindProperty && s.Worker == "" {
		if o, ok := d.Promises[s.Lock][it.Name]; ok {
			return Expectation{o, SourcePromise}
		}
		return Expectation{Held, SourcePromise}
	}
	if it.Kind == KindScenario {
		return Expectation{Matched, SourceDefault}
	}
	return Expectation{Held, SourceDefault}
}

// resolve makes a scenario file item's path absolute against the folder of
// the definition file.
func (it *Item) resolve(defFile string) {
	if it.Kind != KindScenario || !isScenarioFile(it.Name) {
		return
	}
	p := filepath.FromSlash(it.Name)
	if !filepath.IsAbs(p) && defFile != "" {
		p = filepath.Join(filepath.Dir(defFile), p)
	}
	it.Path = p
}

// isScenarioFile tells a scenario file ("dir/x.yaml") from a built-in name.
func isScenarioFile(name string) bool {
	return strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") || strings.Contains(name, "/")
}
