package campaign

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// builder collects a definition from a file or from flags, checking each
// value where it is given; at names that place in errors ("file:3: items.0.property"
// or "-properties").
type builder struct {
	cat      Registry
	def      Definition
	subjects map[string]string // key → where it was given
	items    map[string]string
	expects  []pendingExpect
	readFile func(path string) ([]byte, error)
}

// pendingExpect is a subject's expect entry, checked once every item is known.
type pendingExpect struct {
	subject int
	item    string
	outcome string
	at      string
}

var (
	nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)
	lockRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
)

func newBuilder(cat Registry, file string) *builder {
	return &builder{cat: cat, def: Definition{File: file}, subjects: map[string]string{}, items: map[string]string{}, readFile: readRegular}
}

func errAt(at, format string, args ...any) error {
	return fmt.Errorf("%s: %s", at, fmt.Sprintf(format, args...))
}

func (b *builder) name(v, at string) error {
	if len(v) > MaxNameLen || !nameRE.MatchString(v) {
		return errAt(at, "%q is not a campaign name (allowed: lower-case letters, digits, ., _ and -, starting with a letter or digit, at most %d characters)", v, MaxNameLen)
	}
	b.def.Name = v
	return nil
}

func (b *builder) repetitions(n int, at string) error {
	if n < 1 || n > MaxRepetitions {
		return errAt(at, "%d (allowed: 1 to %d)", n, MaxRepetitions)
	}
	b.def.Repetitions = n
	return nil
}

// subject adds a built-in lock (worker "") or a worker command with an
// optional lock name.
func (b *builder) subject(lock, worker, lockAt, workerAt string) error {
	s := Subject{Lock: lock, Worker: strings.TrimSpace(worker), pos: lockAt}
	if s.Worker != "" {
		s.pos = workerAt
		if len(s.Worker) > MaxCommandLen || strings.ContainsFunc(s.Worker, func(r rune) bool { return r == '|' || !unicode.IsPrint(r) && r != ' ' }) {
			return errAt(workerAt, "not a worker command (allowed: at most %d printable characters, no |: the command is split into words, no shell runs it)", MaxCommandLen)
		}
		if lock != "" && (len(lock) > MaxNameLen || !lockRE.MatchString(lock)) {
			return errAt(lockAt, "%q is not a lock name (allowed: letters, digits, ., _ and -)", lock)
		}
	} else {
		switch {
		case lock == "":
			return errAt(lockAt, "a subject needs a lock or a worker (allowed locks: %s)", strings.Join(b.cat.Locks, ", "))
		case strings.Contains(lock, "+") && b.cat.CheckLock != nil:
			if len(lock) > MaxNameLen*4 {
				return errAt(lockAt, "lock %q is too long (allowed: at most %d characters with its options)", lock[:MaxNameLen], MaxNameLen*4)
			}
			if err := b.cat.CheckLock(lock); err != nil {
				return errAt(lockAt, "%v", err)
			}
		case !slices.Contains(b.cat.Locks, lock):
			return errAt(lockAt, "unknown lock %q (allowed: %s; or a worker command)", lock, strings.Join(b.cat.Locks, ", "))
		}
	}
	if first, dup := b.subjects[s.Key()]; dup {
		return errAt(s.pos, "subject %s is listed twice (first at %s)", s.Key(), first)
	}
	if len(b.def.Subjects) >= MaxSubjects {
		return errAt(s.pos, "more than %d subjects (allowed: at most %d)", MaxSubjects, MaxSubjects)
	}
	b.subjects[s.Key()] = s.pos
	b.def.Subjects = append(b.def.Subjects, s)
	return nil
}

// knownList checks a list of n known limits for the last subject: refused
// on a built-in lock and beyond the catalog's names.
func (b *builder) knownList(n int, at string) error {
	s := b.def.Subjects[len(b.def.Subjects)-1]
	if s.Worker == "" {
		return errAt(at, "lock %s is built in: its known limits come from the promise table (allowed: known limits on a worker subject only)", s.Lock)
	}
	if n > len(b.cat.Limits) {
		return errAt(at, "%d entries (allowed: at most %d, each of %s once)", n, len(b.cat.Limits), b.limitNames())
	}
	return nil
}

// known sets the last subject's known limits, kept sorted: refused on a
// built-in lock (its known limits come from the promise table), beyond
// the catalog's names, or twice. listAt names the list, at(i) its i-th
// entry.
func (b *builder) known(names []string, listAt string, at func(i int) string) error {
	if err := b.knownList(len(names), listAt); err != nil {
		return err
	}
	s := &b.def.Subjects[len(b.def.Subjects)-1]
	for i, name := range names {
		name = strings.TrimSpace(name)
		if !slices.Contains(b.cat.Limits, name) {
			return errAt(at(i), "unknown known limit %q (allowed: %s)", name, b.limitNames())
		}
		j, dup := slices.BinarySearch(s.Known, name)
		if dup {
			return errAt(at(i), "known limit %q is listed twice (allowed: each of %s once)", name, b.limitNames())
		}
		s.Known = slices.Insert(s.Known, j, name)
	}
	return nil
}

func (b *builder) limitNames() string {
	if len(b.cat.Limits) == 0 {
		return "none"
	}
	return strings.Join(b.cat.Limits, ", ")
}

// expect records a subject's expected outcome for an item (checked by finish).
func (b *builder) expect(item, outcome, at string) {
	b.expects = append(b.expects, pendingExpect{len(b.def.Subjects) - 1, item, outcome, at})
}

// property adds the properties a name or prefix selects.
func (b *builder) property(pat, expect, at, expectAt string) error {
	pat = strings.TrimSuffix(strings.TrimSpace(pat), "/")
	names := b.cat.expand(pat)
	if len(names) == 0 {
		return errAt(at, "no property is %q or starts with %q/ (allowed: %s)", pat, pat, strings.Join(b.cat.Properties, ", "))
	}
	for _, n := range names {
		if err := b.item(Item{Kind: KindProperty, Name: n}, expect, at, expectAt); err != nil {
			return err
		}
	}
	return nil
}

// scenario adds a built-in scenario by name, or a scenario file relative
// to the definition's folder (read now: its content is part of the hash).
func (b *builder) scenario(name, expect, at, expectAt string) error {
	name = strings.TrimSpace(name)
	it := Item{Kind: KindScenario, Name: filepath.ToSlash(name)}
	if !isScenarioFile(name) {
		if !slices.Contains(b.cat.Scenarios, name) {
			return errAt(at, "unknown scenario %q (allowed: %s, or a file NAME.yaml relative to the definition)", name, strings.Join(b.cat.Scenarios, ", "))
		}
		return b.item(it, expect, at, expectAt)
	}
	if filepath.IsAbs(name) || len(name) > 4*MaxNameLen {
		return errAt(at, "%q: a scenario file must be a relative path (allowed: a path relative to the definition's folder, at most %d characters), so that every machine names it alike", name, 4*MaxNameLen)
	}
	it.resolve(b.def.File)
	data, err := b.readFile(it.Path)
	if err != nil {
		return errAt(at, "%v (allowed: a readable scenario file, relative to the definition's folder)", err)
	}
	if b.cat.CheckScenario != nil {
		if err := b.cat.CheckScenario(it.Path, data); err != nil {
			return errAt(at, "%v", err)
		}
	}
	sum := sha256.Sum256(data)
	it.FileSHA256 = hex.EncodeToString(sum[:])
	return b.item(it, expect, at, expectAt)
}

// hunt adds count seeds from from on.
func (b *builder) hunt(from int64, count int, search, expect, at, expectAt string) error {
	if count < 1 || count > MaxHuntSeeds {
		return errAt(at, "count %d (allowed: 1 to %d)", count, MaxHuntSeeds)
	}
	if from < 0 || from > 1<<62 {
		return errAt(at, "seed %d (allowed: 0 to %d)", from, int64(1)<<62)
	}
	for i := range int64(count) {
		if err := b.item(Item{Kind: KindHunt, Name: strconv.FormatInt(from+i, 10), Search: search}, expect, at, expectAt); err != nil {
			return err
		}
	}
	return nil
}

func (b *builder) item(it Item, expect, at, expectAt string) error {
	if expect != "" {
		o := Outcome(expect)
		if !slices.Contains(expectable(it.Kind), o) {
			return errAt(expectAt, "%q cannot be expected of a %s (allowed: %s)", expect, it.Kind, outcomeNames(expectable(it.Kind)))
		}
		it.Expect = o
	}
	if first, dup := b.items[it.Key()]; dup {
		return errAt(at, "item %s is listed twice (first at %s)", it.Key(), first)
	}
	if len(b.def.Items) >= MaxItems {
		return errAt(at, "more than %d items after expansion (allowed: at most %d)", MaxItems, MaxItems)
	}
	it.pos = at
	b.items[it.Key()] = at
	b.def.Items = append(b.def.Items, it)
	return nil
}

// finish checks what needs the whole definition and fills the promise
// table's expectations. where names the definition as a whole.
func (b *builder) finish(where, subjectsAt, itemsAt, repsAt string) (*Definition, error) {
	d := &b.def
	switch {
	case len(d.Subjects) == 0:
		return nil, errAt(subjectsAt, "no subject (allowed: 1 to %d locks or worker commands)", MaxSubjects)
	case len(d.Items) == 0:
		return nil, errAt(itemsAt, "no item (allowed: 1 to %d properties, scenarios or hunt seeds)", MaxItems)
	case d.Repetitions == 0:
		return nil, errAt(repsAt, "missing (allowed: 1 to %d)", MaxRepetitions)
	case len(d.Subjects)*len(d.Items) > MaxCells:
		return nil, errAt(where, "%d subjects × %d items = %d cells (allowed: at most %d)", len(d.Subjects), len(d.Items), len(d.Subjects)*len(d.Items), MaxCells)
	case d.Runs() > MaxRuns:
		return nil, errAt(where, "%d cells × %d repetitions = %d runs (allowed: at most %d)", len(d.Subjects)*len(d.Items), d.Repetitions, d.Runs(), MaxRuns)
	}
	if d.Name == "" {
		d.Name = "campaign"
	}
	for _, e := range b.expects {
		it, err := b.findItem(e.item, e.at)
		if err != nil {
			return nil, err
		}
		o := Outcome(e.outcome)
		if !slices.Contains(expectable(it.Kind), o) {
			return nil, errAt(e.at, "%q cannot be expected of a %s (allowed: %s)", e.outcome, it.Kind, outcomeNames(expectable(it.Kind)))
		}
		s := &d.Subjects[e.subject]
		if _, dup := s.Expect[it.Key()]; dup {
			return nil, errAt(e.at, "%s is expected twice", it.Key())
		}
		if s.Expect == nil {
			s.Expect = map[string]Outcome{}
		}
		s.Expect[it.Key()] = o
	}
	if b.cat.Promise != nil {
		for _, s := range d.Subjects {
			if s.Worker != "" {
				continue
			}
			for _, it := range d.Items {
				if it.Kind != KindProperty {
					continue
				}
				if o := b.cat.Promise(s.Lock, it.Name); o != "" && o != Held {
					if d.Promises == nil {
						d.Promises = map[string]map[string]Outcome{}
					}
					if d.Promises[s.Lock] == nil {
						d.Promises[s.Lock] = map[string]Outcome{}
					}
					d.Promises[s.Lock][it.Name] = o
				}
			}
		}
	}
	return d, nil
}

// findItem resolves a subject's expect key: an item key ("property:x"), or
// a bare name that names exactly one item.
func (b *builder) findItem(key, at string) (Item, error) {
	var hits []Item
	for _, it := range b.def.Items {
		if it.Key() == key || it.Name == key {
			hits = append(hits, it)
		}
	}
	switch len(hits) {
	case 1:
		return hits[0], nil
	case 0:
		var keys []string
		for _, it := range b.def.Items {
			keys = append(keys, it.Key())
		}
		if len(keys) > 12 {
			keys = append(keys[:12], "…")
		}
		return Item{}, errAt(at, "%q is not an item of this campaign (allowed: %s)", key, strings.Join(keys, ", "))
	}
	return Item{}, errAt(at, "%q names %d items (allowed: KIND:NAME, e.g. %s)", key, len(hits), hits[0].Key())
}

var errNotRegular = errors.New("not a regular file")
