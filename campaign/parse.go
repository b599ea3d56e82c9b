package campaign

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// A definition file:
//
//	name: nightly                 # the campaign id (default "campaign")
//	repetitions: 20               # runs of every cell, 1 to 1000
//	subjects:                     # 1 to 32
//	  - lock: single              # a built-in lock
//	  - worker: python3 examples/python-redis/worker.py
//	    lock: redis-py            # the lock name the worker declares (optional)
//	    known: [node-clock]       # its known limits: hunts draw none of their faults (optional)
//	    expect:                   # this subject's expected outcomes, by item
//	      failover/sentinel: violated
//	items:                        # 1 to 512 after expansion
//	  - property: exclusion       # a property, or a prefix: every property under it
//	  - property: crash/mid-acquire
//	    expect: held              # the expected outcome for every subject
//	  - scenario: single-crash    # a built-in scenario
//	  - scenario: mine/x.yaml     # a scenario file, relative to this file
//	  - hunt: 42                  # one hunt seed
//	  - hunt: {from: 1, count: 20}
//	    search: learn             # the hunt's search (optional; default random)
//
// Every key not listed is refused, as are anchors and aliases, a second
// YAML document and a file larger than MaxFileSize.

var (
	topFields     = []string{"name", "repetitions", "subjects", "items"}
	subjectFields = []string{"lock", "worker", "known", "expect"}
	itemFields    = []string{"property", "scenario", "hunt", "search", "expect"}
	rangeFields   = []string{"from", "count"}
)

// ReadFile reads and checks a definition file (a regular file of at most
// MaxFileSize bytes; a FIFO or device is refused before it is read).
func ReadFile(path string, cat Registry) (*Definition, error) {
	data, err := readRegular(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data, cat)
}

// Parse checks definition text; file names it in errors (file:line:
// field: what is wrong (allowed: ...)) and anchors scenario files.
func Parse(file string, data []byte, cat Registry) (*Definition, error) {
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%s: the file is %d bytes (allowed: at most %d)", file, len(data), MaxFileSize)
	}
	p := &parser{file: file, b: newBuilder(cat, file)}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s:1: empty definition (allowed: a mapping of %s)", file, strings.Join(topFields, ", "))
		}
		return nil, fmt.Errorf("%s: %s", file, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var second yaml.Node
	if err := dec.Decode(&second); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s:%d: a second YAML document (allowed: one definition per file)", file, max(second.Line, 1))
	}
	if err := p.noAliases(&root); err != nil {
		return nil, err
	}
	if len(root.Content) == 0 {
		return nil, fmt.Errorf("%s:1: empty definition (allowed: a mapping of %s)", file, strings.Join(topFields, ", "))
	}
	return p.top(root.Content[0])
}

type parser struct {
	file string
	b    *builder
}

func (p *parser) at(n *yaml.Node, path string) string {
	return fmt.Sprintf("%s:%d: %s", p.file, n.Line, path)
}

func (p *parser) noAliases(n *yaml.Node) error {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		return fmt.Errorf("%s:%d: anchors and aliases are not allowed (allowed: plain values)", p.file, n.Line)
	}
	for _, c := range n.Content {
		if err := p.noAliases(c); err != nil {
			return err
		}
	}
	return nil
}

// fields checks a mapping's keys and returns its values by key, with the
// key nodes (for their lines).
func (p *parser) fields(n *yaml.Node, path string, allowed []string) (map[string]*yaml.Node, map[string]*yaml.Node, error) {
	if n.Kind != yaml.MappingNode {
		return nil, nil, fmt.Errorf("%s: want a mapping (allowed: %s), got %s", p.at(n, orTop(path)), strings.Join(allowed, ", "), kindName(n))
	}
	vals, keys := map[string]*yaml.Node{}, map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		name := join(path, k.Value)
		if k.Kind != yaml.ScalarNode || !slices.Contains(allowed, k.Value) {
			return nil, nil, fmt.Errorf("%s: unknown field (allowed: %s)", p.at(k, name), strings.Join(allowed, ", "))
		}
		if first, dup := keys[k.Value]; dup {
			return nil, nil, fmt.Errorf("%s: listed twice (first at line %d)", p.at(k, name), first.Line)
		}
		vals[k.Value], keys[k.Value] = v, k
	}
	return vals, keys, nil
}

func (p *parser) str(n *yaml.Node, path string) (string, error) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" && n.Tag != "!!int" {
		return "", fmt.Errorf("%s: want a string, got %s", p.at(n, path), kindName(n))
	}
	if len(n.Value) > MaxCommandLen {
		return "", fmt.Errorf("%s: %d characters (allowed: at most %d)", p.at(n, path), len(n.Value), MaxCommandLen)
	}
	return n.Value, nil
}

func (p *parser) int(n *yaml.Node, path string, lo, hi int64) (int64, error) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		return 0, fmt.Errorf("%s: want a whole number (allowed: %d to %d), got %s", p.at(n, path), lo, hi, kindName(n))
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil || v < lo || v > hi {
		return 0, fmt.Errorf("%s: %s (allowed: %d to %d)", p.at(n, path), n.Value, lo, hi)
	}
	return v, nil
}

func (p *parser) top(n *yaml.Node) (*Definition, error) {
	vals, keys, err := p.fields(n, "", topFields)
	if err != nil {
		return nil, err
	}
	if v, ok := vals["name"]; ok {
		s, err := p.str(v, "name")
		if err != nil {
			return nil, err
		}
		if err := p.b.name(s, p.at(v, "name")); err != nil {
			return nil, err
		}
	}
	if v, ok := vals["repetitions"]; ok {
		r, err := p.int(v, "repetitions", 1, MaxRepetitions)
		if err != nil {
			return nil, err
		}
		if err := p.b.repetitions(int(r), p.at(v, "repetitions")); err != nil {
			return nil, err
		}
	}
	if v, ok := vals["subjects"]; ok {
		if err := p.list(v, "subjects", MaxSubjects, p.subject); err != nil {
			return nil, err
		}
	}
	if v, ok := vals["items"]; ok {
		if err := p.list(v, "items", MaxItems, p.item); err != nil {
			return nil, err
		}
	}
	where := func(k string) string {
		if kn, ok := keys[k]; ok {
			return p.at(kn, k)
		}
		return p.at(n, k)
	}
	return p.b.finish(fmt.Sprintf("%s:%d: (top level)", p.file, n.Line), where("subjects"), where("items"), where("repetitions"))
}

func (p *parser) list(n *yaml.Node, path string, limit int, each func(*yaml.Node, string) error) error {
	if n.Kind != yaml.SequenceNode {
		return fmt.Errorf("%s: want a list, got %s", p.at(n, path), kindName(n))
	}
	if len(n.Content) > limit {
		return fmt.Errorf("%s: %d entries (allowed: at most %d)", p.at(n, path), len(n.Content), limit)
	}
	for i, c := range n.Content {
		if err := each(c, fmt.Sprintf("%s.%d", path, i)); err != nil {
			return err
		}
	}
	return nil
}

func (p *parser) subject(n *yaml.Node, path string) error {
	vals, _, err := p.fields(n, path, subjectFields)
	if err != nil {
		return err
	}
	var lock, worker string
	lockAt, workerAt := p.at(n, path+".lock"), p.at(n, path+".worker")
	if v, ok := vals["lock"]; ok {
		if lock, err = p.str(v, path+".lock"); err != nil {
			return err
		}
		lockAt = p.at(v, path+".lock")
	}
	if v, ok := vals["worker"]; ok {
		if worker, err = p.str(v, path+".worker"); err != nil {
			return err
		}
		workerAt = p.at(v, path+".worker")
		if strings.TrimSpace(worker) == "" {
			return fmt.Errorf("%s: empty (allowed: the command that starts the worker)", workerAt)
		}
	}
	if err := p.b.subject(lock, worker, lockAt, workerAt); err != nil {
		return err
	}
	if v, ok := vals["known"]; ok {
		if err := p.known(v, path+".known"); err != nil {
			return err
		}
	}
	v, ok := vals["expect"]
	if !ok {
		return nil
	}
	if v.Kind != yaml.MappingNode {
		return fmt.Errorf("%s: want a mapping of item to outcome, got %s", p.at(v, path+".expect"), kindName(v))
	}
	if len(v.Content)/2 > MaxItems {
		return fmt.Errorf("%s: %d entries (allowed: at most %d)", p.at(v, path+".expect"), len(v.Content)/2, MaxItems)
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, o := v.Content[i], v.Content[i+1]
		fp := path + ".expect." + k.Value
		out, err := p.str(o, fp)
		if err != nil {
			return err
		}
		p.b.expect(k.Value, out, p.at(k, fp))
	}
	return nil
}

// known reads a worker subject's known limits: a list of limit names.
func (p *parser) known(n *yaml.Node, path string) error {
	if n.Kind != yaml.SequenceNode {
		return fmt.Errorf("%s: want a list of known limits (allowed: %s), got %s", p.at(n, path), p.b.limitNames(), kindName(n))
	}
	if err := p.b.knownList(len(n.Content), p.at(n, path)); err != nil {
		return err
	}
	at := func(i int) string { return p.at(n.Content[i], fmt.Sprintf("%s.%d", path, i)) }
	names := make([]string, len(n.Content))
	for i, c := range n.Content {
		if c.Kind != yaml.ScalarNode || c.Tag != "!!str" {
			return fmt.Errorf("%s: want a known limit's name (allowed: %s), got %s", at(i), p.b.limitNames(), kindName(c))
		}
		names[i] = c.Value
	}
	return p.b.known(names, p.at(n, path), at)
}

func (p *parser) item(n *yaml.Node, path string) error {
	vals, _, err := p.fields(n, path, itemFields)
	if err != nil {
		return err
	}
	var kinds []string
	for _, k := range ItemKinds {
		if _, ok := vals[string(k)]; ok {
			kinds = append(kinds, string(k))
		}
	}
	if len(kinds) != 1 {
		return fmt.Errorf("%s: want exactly one of property, scenario, hunt, got %d (%s)", p.at(n, path), len(kinds), strings.Join(kinds, ", "))
	}
	kind := kinds[0]
	v, fp := vals[kind], path+"."+kind
	var expect string
	expectAt := p.at(n, path+".expect")
	if e, ok := vals["expect"]; ok {
		if expect, err = p.str(e, path+".expect"); err != nil {
			return err
		}
		expectAt = p.at(e, path+".expect")
	}
	var search string
	if s, ok := vals["search"]; ok {
		if search, err = p.search(s, path+".search", ItemKind(kind)); err != nil {
			return err
		}
	}
	switch ItemKind(kind) {
	case KindProperty:
		s, err := p.str(v, fp)
		if err != nil {
			return err
		}
		return p.b.property(s, expect, p.at(v, fp), expectAt)
	case KindScenario:
		s, err := p.str(v, fp)
		if err != nil {
			return err
		}
		return p.b.scenario(s, expect, p.at(v, fp), expectAt)
	}
	if v.Kind == yaml.ScalarNode {
		seed, err := p.int(v, fp, 0, 1<<62)
		if err != nil {
			return err
		}
		return p.b.hunt(seed, 1, search, expect, p.at(v, fp), expectAt)
	}
	r, _, err := p.fields(v, fp, rangeFields)
	if err != nil {
		return err
	}
	var from, count int64 = 0, 0
	if f, ok := r["from"]; ok {
		if from, err = p.int(f, fp+".from", 0, 1<<62); err != nil {
			return err
		}
	}
	c, ok := r["count"]
	if !ok {
		return fmt.Errorf("%s: missing (allowed: 1 to %d seeds)", p.at(v, fp+".count"), MaxHuntSeeds)
	}
	if count, err = p.int(c, fp+".count", 1, MaxHuntSeeds); err != nil {
		return err
	}
	return p.b.hunt(from, int(count), search, expect, p.at(v, fp), expectAt)
}

// search checks an item's search: a hunt item's only, one of the
// registry's searches; the default (the first) is stored as "".
func (p *parser) search(n *yaml.Node, path string, kind ItemKind) (string, error) {
	allowed := p.b.cat.Searches
	if kind != KindHunt {
		return "", fmt.Errorf("%s: only a hunt item has a search (allowed: search beside hunt; searches: %s)", p.at(n, path), strings.Join(allowed, ", "))
	}
	s, err := p.str(n, path)
	if err != nil {
		return "", err
	}
	if !slices.Contains(allowed, s) {
		if len(allowed) == 0 {
			return "", fmt.Errorf("%s: %q (allowed: none: this registry has no hunt searches)", p.at(n, path), s)
		}
		return "", fmt.Errorf("%s: %q (allowed: %s)", p.at(n, path), s, strings.Join(allowed, ", "))
	}
	if s == allowed[0] {
		return "", nil
	}
	return s, nil
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return "nothing"
		case "!!bool":
			return "a boolean"
		case "!!int", "!!float":
			return "a number " + n.Value
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "something else"
}

func orTop(path string) string {
	if path == "" {
		return "(top level)"
	}
	return path
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}
