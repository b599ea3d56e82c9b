package campaign

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Report is a merged campaign: every cell with its rate (campaign.json).
type Report struct {
	Campaign       string `json:"campaign"`
	DefinitionHash string `json:"definition_hash"`
	Version        string `json:"lockfault_version"`
	// Shards is N; Merged lists the shards found ("1/4"), Missing those
	// not found, Incomplete those that stopped before their last run
	// ("2/4: 37 of 50 runs").
	Shards     int      `json:"shards"`
	Merged     []string `json:"merged"`
	Missing    []string `json:"missing,omitempty"`
	Incomplete []string `json:"incomplete,omitempty"`
	// Planned runs of the campaign and Done that are in the results.
	Planned int `json:"runs_planned"`
	Done    int `json:"runs_done"`
	// MatchLowerBound is the rule the verdicts were judged by.
	MatchLowerBound float64   `json:"match_lower_bound"`
	Subjects        []string  `json:"subjects"` // subject keys, in the definition's order
	Items           []RunItem `json:"items"`
	Cells           []Cell    `json:"cells"`
	MergedAt        time.Time `json:"merged_at"`
	// FirstFinished and LastFinished bound when the merged runs ended;
	// RunWall is the sum of their wall times (runs side by side overlap).
	FirstFinished time.Time     `json:"first_finished,omitzero"`
	LastFinished  time.Time     `json:"last_finished,omitzero"`
	RunWall       time.Duration `json:"run_wall_ns,omitempty"`
}

// Complete reports whether every shard was merged and every run of it is
// in the results.
func (r *Report) Complete() bool { return len(r.Missing) == 0 && r.Done == r.Planned }

// Count returns how many cells have a verdict.
func (r *Report) Count(v Verdict) int {
	n := 0
	for _, c := range r.Cells {
		if c.Verdict == v {
			n++
		}
	}
	return n
}

// Cell finds a cell by subject key (or label) and item key.
func (r *Report) Cell(subject, item string) (Cell, bool) {
	for _, c := range r.Cells {
		if (c.Subject.Key == subject || c.Subject.Label == subject) && string(c.Item.Kind)+":"+c.Item.Name == item {
			return c, true
		}
	}
	return Cell{}, false
}

// shardDir is one shard's results folder, read.
type shardDir struct {
	dir   string
	man   *Manifest
	shard Shard
}

// Merge combines the results folders of a campaign's shards (each dir a
// shard's folder, or a folder whose subfolders are shards', as a CI
// artifact download leaves them) into one report. It refuses shards of
// different definitions or lockfault versions (naming both), two folders
// of one shard, two results of one run identity, a result that is no run
// of the definition or of its folder's shard, and one subject run at two
// library versions. Missing shards and runs are reported in the result
// (Missing, Incomplete, Done < Planned), not refused: the cells say what
// the present runs say.
func Merge(dirs ...string) (*Report, error) {
	shards, err := findShards(dirs)
	if err != nil {
		return nil, err
	}
	ref := shards[0]
	byIndex, err := indexShards(ref, shards)
	if err != nil {
		return nil, err
	}
	def, err := ref.man.Def()
	if err != nil {
		return nil, fmt.Errorf("%s: %v", ref.dir, err)
	}
	m := newMerger(ref, def)
	for i := 1; i <= ref.shard.N; i++ {
		s, ok := byIndex[i]
		if !ok {
			m.rep.Missing = append(m.rep.Missing, Shard{i, ref.shard.N}.String())
			continue
		}
		if err := m.addShard(s); err != nil {
			return nil, err
		}
	}
	return m.report(), nil
}

// indexShards checks that every shard is of ref's campaign and in one
// folder only, and indexes them by number.
func indexShards(ref shardDir, shards []shardDir) (map[int]shardDir, error) {
	byIndex := map[int]shardDir{}
	for _, s := range shards {
		if err := sameCampaign(ref, s); err != nil {
			return nil, err
		}
		if first, dup := byIndex[s.shard.I]; dup {
			return nil, fmt.Errorf("shard %s is in two folders, %s and %s: merge each shard once", s.man.Shard, first.dir, s.dir)
		}
		byIndex[s.shard.I] = s
	}
	return byIndex, nil
}

// place is where a result was read: its file and line.
type place struct {
	dir  string
	line int
}

// merger gathers the results of a campaign's shards into its cells.
type merger struct {
	ref      shardDir
	def      *Definition
	specs    map[string]RunSpec // the definition's runs by identity
	seen     map[string]place   // where each run's result was read
	lib      map[string]*Result // subject key → first result with a library version
	libAt    map[string]place
	cells    map[string][]*Result
	reportOf map[*Result]string
	rep      *Report
}

func newMerger(ref shardDir, def *Definition) *merger {
	m := &merger{ref: ref, def: def, specs: map[string]RunSpec{}, seen: map[string]place{}, lib: map[string]*Result{},
		libAt: map[string]place{}, cells: map[string][]*Result{}, reportOf: map[*Result]string{}}
	for _, sp := range def.Enumerate() {
		m.specs[sp.Identity] = sp
	}
	m.rep = &Report{Campaign: def.Name, DefinitionHash: ref.man.DefinitionHash, Version: ref.man.Version, Shards: ref.shard.N,
		Planned: def.Runs(), MatchLowerBound: MatchLowerBound, MergedAt: time.Now().UTC()}
	return m
}

// addShard reads one shard's results.
func (m *merger) addShard(s shardDir) error {
	m.rep.Merged = append(m.rep.Merged, s.man.Shard)
	path := filepath.Join(s.dir, FileResults)
	lines, err := ReadResults(path)
	if err != nil {
		return err
	}
	for i := range lines {
		if err := m.addResult(s, path, &lines[i]); err != nil {
			return err
		}
	}
	if got, want := len(lines), s.man.Assigned; got < want {
		m.rep.Incomplete = append(m.rep.Incomplete, fmt.Sprintf("%s: %d of %d runs", s.man.Shard, got, want))
	}
	return nil
}

// addResult checks one result (of this definition, of its folder's shard,
// recorded once, at the subject's one library version) and counts it.
func (m *merger) addResult(s shardDir, path string, l *Line) error {
	at := fmt.Sprintf("%s:%d", path, l.Line)
	r := &l.Result
	sp, ok := m.specs[r.Identity]
	switch {
	case r.DefinitionHash != m.ref.man.DefinitionHash:
		return fmt.Errorf("%s: a result of definition %s in a shard of definition %s: results of different campaign definitions cannot be merged", at, ShortHash(r.DefinitionHash), ShortHash(m.ref.man.DefinitionHash))
	case !ok:
		return fmt.Errorf("%s: %q is not a run of campaign %s (definition %s)", at, r.Identity, m.def.Name, ShortHash(m.ref.man.DefinitionHash))
	case !s.shard.Has(r.Identity):
		return fmt.Errorf("%s: %q belongs to shard %s, not to this folder's shard %s", at, r.Identity, Shard{Of(r.Identity, s.shard.N), s.shard.N}, s.man.Shard)
	}
	if first, dup := m.seen[r.Identity]; dup {
		return fmt.Errorf("run %q is recorded twice: %s:%d and %s (merge each shard once; do not copy results between folders)", r.Identity, first.dir, first.line, at)
	}
	m.seen[r.Identity] = place{path, l.Line}
	key := sp.Subject.Key()
	if v := r.Subject.LibraryVersion; v != "" {
		if first, ok := m.lib[key]; ok && first.Subject.LibraryVersion != v {
			return fmt.Errorf("subject %s ran at two library versions, %s (%s:%d) and %s (%s): one campaign tests one version; run the shards from one build",
				key, first.Subject.LibraryVersion, m.libAt[key].dir, m.libAt[key].line, v, at)
		} else if !ok {
			m.lib[key], m.libAt[key] = r, place{path, l.Line}
		}
	}
	cell := CellKey(sp.Subject, sp.Item)
	m.cells[cell] = append(m.cells[cell], r)
	if r.Report != "" && !filepath.IsAbs(r.Report) {
		m.reportOf[r] = filepath.Join(s.dir, filepath.FromSlash(r.Report))
	}
	rep := m.rep
	rep.Done++
	rep.RunWall += r.Wall
	if f := r.Finished; !f.IsZero() {
		if rep.FirstFinished.IsZero() || f.Before(rep.FirstFinished) {
			rep.FirstFinished = f
		}
		if f.After(rep.LastFinished) {
			rep.LastFinished = f
		}
	}
	return nil
}

// report is the merged report: the definition's subjects and items, and
// one cell per subject × item from the results read.
func (m *merger) report() *Report {
	rep, def := m.rep, m.def
	for _, s := range def.Subjects {
		rep.Subjects = append(rep.Subjects, s.Key())
	}
	for _, it := range def.Items {
		rep.Items = append(rep.Items, it.RunItem())
	}
	for _, s := range def.Subjects {
		for _, it := range def.Items {
			k := CellKey(s, it)
			rep.Cells = append(rep.Cells, newCell(s, it, def.Expect(s, it), def.Repetitions, m.cells[k], func(r *Result) string { return m.reportOf[r] }))
		}
	}
	return rep
}

// findShards reads every shard folder named, or found one level below a
// folder named.
func findShards(dirs []string) ([]shardDir, error) {
	if len(dirs) == 0 {
		return nil, errors.New("merge: no results folder given (allowed: the folders of a campaign's shards, or one folder holding them)")
	}
	var out []shardDir
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, FileManifest)); err == nil {
			s, err := readShardDir(d)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
			continue
		}
		ents, err := os.ReadDir(d)
		if err != nil {
			return nil, err
		}
		found := 0
		for _, e := range ents {
			sub := filepath.Join(d, e.Name())
			if !e.IsDir() {
				continue
			}
			if _, err := os.Stat(filepath.Join(sub, FileManifest)); err != nil {
				continue
			}
			if found++; found > MaxShards {
				return nil, fmt.Errorf("%s: more than %d shard folders (allowed: at most %d)", d, MaxShards, MaxShards)
			}
			s, err := readShardDir(sub)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		if found == 0 {
			return nil, fmt.Errorf("%s: no %s in it or in a folder just below it (allowed: the results folder of `simulate campaign -shard i/N`)", d, FileManifest)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].shard.I < out[j].shard.I })
	return out, nil
}

func readShardDir(dir string) (shardDir, error) {
	m, err := ReadManifest(filepath.Join(dir, FileManifest))
	if err != nil {
		return shardDir{}, err
	}
	sh, _ := ParseShard(m.Shard) // checked by ReadManifest
	return shardDir{dir: dir, man: m, shard: sh}, nil
}

// sameCampaign refuses to merge shards of different campaigns, naming both.
func sameCampaign(a, b shardDir) error {
	desc := func(s shardDir) string {
		return fmt.Sprintf("campaign %s, definition %s, %s: shard %s in %s", s.man.Campaign, ShortHash(s.man.DefinitionHash), s.man.Version, s.man.Shard, s.dir)
	}
	switch {
	case a.man.Version != b.man.Version:
		return fmt.Errorf("cannot merge results of two lockfault versions, %q and %q (%s; %s): run every shard with one build", a.man.Version, b.man.Version, desc(a), desc(b))
	case a.man.DefinitionHash != b.man.DefinitionHash:
		return fmt.Errorf("cannot merge two campaign definitions, %s and %s (%s; %s): run every shard from one definition file", ShortHash(a.man.DefinitionHash), ShortHash(b.man.DefinitionHash), desc(a), desc(b))
	case a.shard.N != b.shard.N:
		return fmt.Errorf("cannot merge two splits of one campaign, into %d and into %d shards (%s; %s)", a.shard.N, b.shard.N, desc(a), desc(b))
	}
	return nil
}

// subjectLabel finds a subject key's label among the report's cells.
func (r *Report) subjectLabel(key string) string {
	for _, c := range r.Cells {
		if c.Subject.Key == key {
			return c.Subject.Label
		}
	}
	return strings.TrimPrefix(key, "lock=")
}
