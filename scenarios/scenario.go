// Package scenarios is the generator: it loads the YAML scenario files in
// this folder (topology, lock, workload, fault schedule, expected verdict)
// and validates them, naming file:line and field for every mistake. The
// format is documented in docs/SCENARIOS.md.
package scenarios

import (
	"bytes"
	"embed"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lockfault/lockfault/internal/userfile"
	"gopkg.in/yaml.v3"

	"github.com/lockfault/lockfault"
)

//go:embed *.yaml
var builtin embed.FS

// Scenario is one experiment.
type Scenario struct {
	Name        string   `yaml:"name"`
	Claim       string   `yaml:"claim"`
	Description string   `yaml:"description"`
	Topology    Topology `yaml:"topology"`
	Lock        Lock     `yaml:"lock"`
	Workload    Workload `yaml:"workload"`
	Nemesis     Nemesis  `yaml:"nemesis"`
	Expect      []string `yaml:"expect"`
	Allow       []string `yaml:"allow"`
	// StuckAfter: no grant for this long while clients try is "stuck".
	StuckAfter Duration `yaml:"stuck_after"`
	// Evidence is what every cycle that looks safe must show (default:
	// a grant and a completed critical section).
	Evidence *EvidenceSpec `yaml:"evidence,omitempty"`
	// Variants run the same schedule against other locks (or settings):
	// each overrides only the sections it names. The catalogue runs them all.
	Variants []yaml.Node `yaml:"variants,omitempty"`
	// Variant is the name of the variant this scenario was built as ("" for the base).
	Variant string `yaml:"-"`
	// Compare names a workload measurement the catalogue compares across
	// variants (C15): acquire-success-rate or mean-acquire.
	Compare string `yaml:"compare,omitempty"`

	File string         `yaml:"-"`
	node *yaml.Node     `yaml:"-"`
	line map[string]int `yaml:"-"`
	// prefix is the path of the variant this scenario was built as
	// ("variants.2."): its errors point into the variant first.
	prefix string
}

// Topology of the nodes.
type Topology struct {
	Kind      lockfault.TopologyKind `yaml:"kind"`     // standalone, replicated, masters, etcd, cluster
	Replicas  int                    `yaml:"replicas"` // replicated: 1..2; cluster: 0..2 per master
	Sentinels int                    `yaml:"sentinels"`
	Masters   int                    `yaml:"masters"` // masters: 1..7 independent; cluster: 3..7 sharing the slots
	// NodeTimeout is a cluster's cluster-node-timeout (default 2s).
	NodeTimeout Duration `yaml:"node_timeout,omitempty"`
	Persistence string   `yaml:"persistence"` // none, aof-always, aof-everysec
	// Password, when set, is required by every Redis node (requirepass,
	// masterauth) and Sentinel (requirepass, auth-pass) and handed to every
	// lock through its endpoints. Not for etcd.
	Password string `yaml:"password,omitempty"`
}

// Lock under test.
type Lock struct {
	Name    string            `yaml:"name"`
	TTL     Duration          `yaml:"ttl"`
	Wait    Duration          `yaml:"wait"` // how long one acquire keeps trying
	Options map[string]string `yaml:"options"`
}

// Label names the lock with its options, as a subject's label does:
// "redisson+wait-replicas=1" (options in name order), or the bare name.
func (l Lock) Label() string {
	s := l.Name
	for _, k := range slices.Sorted(maps.Keys(l.Options)) {
		s += "+" + k + "=" + l.Options[k]
	}
	return s
}

// Workload every client runs: acquire, critical section, release.
type Workload struct {
	Clients int      `yaml:"clients"`
	Hold    Duration `yaml:"hold"`  // critical section length
	Think   Duration `yaml:"think"` // pause after a release (or failed acquire)
	// StartApart: client cN starts its first round (N-1) × StartApart
	// after c1 (0: all at once), so that no two clients race for the key
	// at the start unless the scenario wants them to.
	StartApart Duration `yaml:"start_apart"`
	Fencing    bool     `yaml:"fencing"` // the resource rejects stale fencing tokens
	// RestartCrashed restarts a crashed worker after this long (0: never).
	RestartCrashed Duration `yaml:"restart_crashed"`
	// Resource is the name the lock guards.
	Resource string `yaml:"resource"`
	// Reentry: each round acquires the lock this many times on the same
	// client (leases L, L#2 .. L#N), releases N-1 of them, runs the critical
	// section under L and releases L (claim C14). 0 or 1: plain rounds.
	Reentry int `yaml:"reentry"`
	// Quiesce says what a quiesce step (and the drain at the end of the
	// run) does to rounds under way: "wait" (default) lets them run their
	// full hold; "cut" ends holds early (the critical section writes at
	// once) and releases grants that arrive while the gate is closed
	// without a critical section, so the lock is free within milliseconds.
	Quiesce string `yaml:"quiesce"`
	// Round says who sequences a plain round: "harness" (default: one
	// command per step) or "worker" (one `round` command; the worker runs
	// acquire, critical section and release without a harness round trip
	// between them, each step still recorded with its own times). Only for
	// plain rounds (no reentry, extends, release_old, hold_until_valid,
	// write_if_valid).
	Round string `yaml:"round"`
	// Keys: each round guards one of this many keys, picked at random
	// ("<resource>-1" .. "<resource>-N"); 0 or 1: the one key <resource>.
	Keys int `yaml:"keys"`
	// Extends: each round extends the lease this many times, every
	// ExtendEvery, before its critical section; an extend that fails ends
	// the round without a critical section (the client lost the lock).
	Extends     int      `yaml:"extends"`
	ExtendEvery Duration `yaml:"extend_every"`
	// HoldUntilValid > 0: the critical section lasts until this long before
	// the end of the validity the lock reported (by the acquire or the last
	// extend), instead of hold; a client with less validity left than this
	// skips its critical section. A lock that reports too long a validity
	// then overlaps the next holder.
	HoldUntilValid Duration `yaml:"hold_until_valid"`
	// WriteIfValid > 0: the critical section checks its lease before the
	// write, as a careful application does, and writes only if the
	// validity the lock last reported (acquire, extend or renewal) still
	// has at least this long to run; otherwise it gives the write up (the
	// cs fails, definitely: nothing was written). A lock whose renewals
	// report validity the key does not have then loses an update.
	WriteIfValid Duration `yaml:"write_if_valid"`
	// ReleaseOld: each round, once it holds a new lease, the client also
	// releases (and, with extends, extends) its previous, already released
	// lease; the lock must refuse both and keep the new one.
	ReleaseOld bool `yaml:"release_old"`
}

// Quiesce modes (Workload.Quiesce).
const (
	QuiesceWait = "wait"
	QuiesceCut  = "cut"
)

// Round modes (Workload.Round).
const (
	RoundHarness = "harness"
	RoundWorker  = "worker"
)

// Nemesis is the fault schedule.
type Nemesis struct {
	Cycles   int      `yaml:"cycles"`
	Warmup   Duration `yaml:"warmup"`           // before the first cycle
	Cooldown Duration `yaml:"cooldown"`         // after each cycle
	Steps    []Step   `yaml:"steps"`            // one cycle
	Random   *Random  `yaml:"random,omitempty"` // or a random schedule
}

// Random describes a seeded random nemesis.
type Random struct {
	Faults   []string `yaml:"faults"`    // fault names to choose from
	Targets  []string `yaml:"targets"`   // targets to choose from
	Interval Duration `yaml:"interval"`  // mean time between faults
	For      Duration `yaml:"for"`       // how long each fault lasts
	PerCycle int      `yaml:"per_cycle"` // faults per cycle (default 3)
	Seed     int64    `yaml:"seed"`

	// Line is the line of the random section: generated steps carry it.
	Line int `yaml:"-"`
}

// Step is one action of a cycle. Exactly one of Fault, Heal, Sleep, Await,
// Quiesce, Resume is set.
type Step struct {
	Fault  string            `yaml:"fault"`
	Target string            `yaml:"target"`
	For    Duration          `yaml:"for"` // heal after this long (0: until a heal step or the cycle's end)
	Params map[string]string `yaml:"params"`

	Heal    string   `yaml:"heal"` // a fault name, or "all"
	Sleep   Duration `yaml:"sleep"`
	Await   string   `yaml:"await"`  // grant, read, write, renew, in-sync
	Within  Duration `yaml:"within"` // await timeout (default 30s)
	By      string   `yaml:"by"`     // await: only an event of this client counts
	Quiesce bool     `yaml:"quiesce"`
	Resume  bool     `yaml:"resume"`

	// Command: with `await: command`, the command (or reply) to wait for.
	Command *CommandMatch `yaml:"command,omitempty"`

	Line int `yaml:"-"`
}

// UnmarshalYAML accepts a mapping, or the bare words quiesce and resume.
func (s *Step) UnmarshalYAML(n *yaml.Node) error {
	s.Line = n.Line
	if n.Kind == yaml.ScalarNode {
		switch n.Value {
		case "quiesce":
			s.Quiesce = true
		case "resume":
			s.Resume = true
		default:
			return fmt.Errorf("line %d: step %q: a bare step must be quiesce or resume; otherwise use a mapping with one of fault, heal, sleep, await", n.Line, n.Value)
		}
		return nil
	}
	type plain Step
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	p.Line = n.Line
	*s = Step(p)
	return nil
}

// String renders a step for schedules and logs.
func (s Step) String() string {
	switch {
	case s.Fault != "":
		out := "fault " + s.Fault
		if s.Target != "" {
			out += " on " + s.Target
		}
		if s.For.D() > 0 {
			out += " for " + s.For.D().String()
		}
		keys := make([]string, 0, len(s.Params))
		for k := range s.Params {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out += fmt.Sprintf(" %s=%s", k, s.Params[k])
		}
		return out
	case s.Heal != "":
		return "heal " + s.Heal
	case s.Sleep.D() > 0:
		return "sleep " + s.Sleep.D().String()
	case s.Await != "":
		out := "await " + s.Await
		if s.Command != nil {
			out += " " + s.Command.String()
		}
		if s.By != "" {
			out += " by " + s.By
		}
		if s.Within.D() > 0 && s.Within.D() != 30*time.Second {
			out += " within " + s.Within.D().String()
		}
		return out
	case s.Quiesce:
		return "quiesce"
	case s.Resume:
		return "resume"
	}
	return "?"
}

// Duration is a time.Duration written as "1.5s" or "200ms".
type Duration time.Duration

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// UnmarshalYAML parses a Go duration string (see parseDuration).
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a duration such as 500ms or 2s", n.Line)
	}
	v, err := parseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %v", n.Line, err)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration as text ("1.5s").
func (d Duration) MarshalYAML() (any, error) { return d.D().String(), nil }

// Load reads a scenario from a file path, or a built-in one by name.
func Load(nameOrPath string) (*Scenario, error) {
	if strings.HasSuffix(nameOrPath, ".yaml") || strings.Contains(nameOrPath, "/") {
		data, err := ReadFile(nameOrPath)
		if err != nil {
			return nil, err
		}
		return Parse(nameOrPath, data)
	}
	data, err := builtin.ReadFile(nameOrPath + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("no scenario %q (built-in: %s)", nameOrPath, strings.Join(Names(), ", "))
	}
	return Parse(filepath.Join("scenarios", nameOrPath+".yaml"), data)
}

// ReadFile reads a scenario file: a regular file of at most MaxFileSize
// bytes, refused before it is read if it is anything else (a FIFO, which
// would block the reader, a device, a directory) or larger.
func ReadFile(path string) ([]byte, error) {
	return userfile.ReadFile(path, MaxFileSize)
}

// Names lists the built-in scenarios.
func Names() []string {
	ents, _ := builtin.ReadDir(".")
	var out []string
	for _, e := range ents {
		out = append(out, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(out)
	return out
}

// Parse decodes and validates a scenario; file names it in errors. It
// accepts exactly one YAML document whose fields all exist and have the
// right form; every error reads file:line: field.path: what is wrong.
func Parse(file string, data []byte) (*Scenario, error) {
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%s: the file is %d bytes (allowed: at most %d)", file, len(data), MaxFileSize)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if err == io.EOF {
			return nil, fmt.Errorf("%s:1: empty scenario (allowed: one YAML mapping with name, topology, lock, workload, nemesis, expect)", file)
		}
		return nil, prefixLines(err, file, lastLine(data))
	}
	var second yaml.Node
	if err := dec.Decode(&second); err != io.EOF {
		line := second.Line
		if err != nil {
			return nil, prefixLines(err, file, lastLine(data))
		}
		return nil, fmt.Errorf("%s:%d: a second YAML document (allowed: one scenario per file)", file, line)
	}
	if len(root.Content) == 0 {
		return nil, fmt.Errorf("%s:1: empty scenario (allowed: one YAML mapping with name, topology, lock, workload, nemesis, expect)", file)
	}
	top := root.Content[0]
	if err := checkShape(file, top, reflect.TypeOf(Scenario{}), ""); err != nil {
		return nil, err
	}
	s := &Scenario{}
	if err := top.Decode(s); err != nil {
		return nil, prefixLines(err, file, lastLine(data))
	}
	s.File = file
	s.node = top
	s.line = map[string]int{}
	index(s.node, "", s.line)
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if len(s.Variants) > MaxVariants {
		return nil, s.ErrAt("variants", "%d variants (allowed: at most %d)", len(s.Variants), MaxVariants)
	}
	seen := map[string]bool{}
	for i, name := range s.VariantNames()[1:] {
		if name == "" || seen[name] {
			return nil, s.ErrAt(fmt.Sprintf("variants.%d.name", i), "every variant needs a unique name")
		}
		if err := s.checkText(fmt.Sprintf("variants.%d.name", i), name, MaxNameLen); err != nil {
			return nil, err
		}
		seen[name] = true
		if _, err := s.WithVariant(name); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// lastLine is the number of the file's last line.
func lastLine(data []byte) int {
	n := bytes.Count(data, []byte("\n"))
	if len(data) > 0 && data[len(data)-1] != '\n' {
		n++
	}
	if n == 0 {
		n = 1
	}
	return n
}

// index records the line of every field path ("lock.ttl", "nemesis.steps.2.fault").
func index(n *yaml.Node, path string, out map[string]int) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := join(path, n.Content[i].Value)
			out[p] = n.Content[i].Line
			index(n.Content[i+1], p, out)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p := join(path, fmt.Sprint(i))
			out[p] = c.Line
			index(c, p, out)
		}
	}
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

// errAt formats an error at the line of a field path (or its nearest
// parent); a variant's own fields come first.
func (s *Scenario) errAt(path, format string, args ...any) error {
	if s.prefix != "" {
		if _, ok := s.line[s.prefix+path]; ok {
			path = s.prefix + path
		}
	}
	p := path
	for {
		if l, ok := s.line[p]; ok {
			return fmt.Errorf("%s:%d: %s: %s", s.File, l, path, fmt.Sprintf(format, args...))
		}
		i := strings.LastIndex(p, ".")
		if i < 0 {
			// A field missing with its whole section: the document's line.
			if s.node != nil {
				return fmt.Errorf("%s:%d: %s: %s", s.File, s.node.Line, path, fmt.Sprintf(format, args...))
			}
			return fmt.Errorf("%s: %s: %s", s.File, path, fmt.Sprintf(format, args...))
		}
		p = p[:i]
	}
}
