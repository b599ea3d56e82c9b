package pages

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lockfault/lockfault/campaign"
	"github.com/lockfault/lockfault/card"
	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/report"
)

// Bounds of the index's scan: it reads at most this much of each file
// and lists at most this many entries, so a folder of a hundred thousand
// runs still gives a page in seconds.
const (
	MaxIndexEntries  = 20000     // runs, cards and campaigns together
	MaxIndexDepth    = 10        // folders below the reports root
	MaxIndexRead     = 256 << 10 // bytes read from a report.json or suite.json
	MaxIndexCampaign = 16 << 20  // bytes read from a campaign.json
	MaxIndexCells    = 2000      // cells shown per campaign
)

// indexRun is one run folder (report.json).
type indexRun struct {
	Dir      string // relative to the root, forward slashes
	Scenario string
	Lock     string
	Backend  string
	RunID    string
	Started  time.Time
	Duration time.Duration
	Verdict  string
	Observed []string
	Expect   []string
	Matched  bool
	Why      string
	Error    string
	Finding  string // the first finding, one sentence
	Partial  bool   // the file was cut at MaxIndexRead: only its head was read
	Problem  string // why the file could not be read
}

// Failed is a run that did not match, failed, or could not be read.
func (r *indexRun) Failed() bool { return !r.Matched || r.Error != "" || r.Problem != "" }

// indexCard is one report card folder (suite.json).
type indexCard struct {
	Dir     string
	Card    *card.Card
	Problem string
}

// Failed is a card with a violated row or a harness error.
func (c *indexCard) Failed() bool {
	return c.Problem != "" || c.Card.Count(card.Violated)+c.Card.Count(card.HarnessError) > 0
}

// indexCampaign is one merged campaign folder (campaign.json).
type indexCampaign struct {
	Dir     string
	Report  *campaign.Report
	Problem string
}

// Failed is a campaign with a cell that differs or has no run, or that is
// incomplete.
func (c *indexCampaign) Failed() bool {
	return c.Problem != "" || !c.Report.Complete() || c.Report.Count(campaign.Differs)+c.Report.Count(campaign.NoRuns) > 0
}

// indexData is what the page shows.
type indexData struct {
	Runs      []*indexRun
	Cards     []*indexCard
	Campaigns []*indexCampaign
	Hunts     []*indexHunt
	// ShardRuns counts the runs in campaign shard folders (a folder with
	// results.jsonl): their campaign's cells count them, so they are not
	// listed as runs of their own.
	ShardRuns int
	// Truncated: the scan stopped at MaxIndexEntries.
	Truncated bool
}

// scanIndex walks root (not following symbolic links, at most
// MaxIndexDepth folders deep) and reads every report.json, suite.json,
// campaign.json and hunt.json it finds, each within its bound; the runs
// under a hunt's folder count in the hunt's row, those under a campaign
// shard's folder (results.jsonl) in d.ShardRuns.
func scanIndex(root string) (*indexData, error) {
	d := &indexData{}
	n := 0
	var runs [][2]string // report.json paths and their folders
	var shards []string  // campaign shard folders
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			if path == root {
				return err
			}
			return nil // an unreadable folder is skipped, not fatal
		}
		if e.IsDir() {
			rel, _ := filepath.Rel(root, path)
			if rel != "." && strings.Count(filepath.ToSlash(rel), "/") >= MaxIndexDepth {
				return fs.SkipDir
			}
			return nil
		}
		if !e.Type().IsRegular() {
			return nil
		}
		name := e.Name()
		if name == campaign.FileResults {
			dir, _ := filepath.Rel(root, filepath.Dir(path))
			shards = append(shards, filepath.ToSlash(dir))
			return nil
		}
		if name != report.FileJSON && name != FileSuiteJSON && name != campaign.FileJSON && name != FileHuntJSON {
			return nil
		}
		if n++; n > MaxIndexEntries {
			d.Truncated = true
			return fs.SkipAll
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		dir = filepath.ToSlash(dir)
		switch name {
		case report.FileJSON:
			runs = append(runs, [2]string{path, dir}) // read once the hunts are known
		case FileSuiteJSON:
			c := &indexCard{Dir: dir}
			c.Card, err = readIndexJSON[card.Card](path, FileSuiteJSON, MaxIndexRead)
			if err != nil {
				c.Problem, c.Card = err.Error(), &card.Card{}
			}
			d.Cards = append(d.Cards, c)
		case campaign.FileJSON:
			c := &indexCampaign{Dir: dir}
			c.Report, err = readIndexJSON[campaign.Report](path, campaign.FileJSON, MaxIndexCampaign)
			if err != nil {
				c.Problem, c.Report = err.Error(), &campaign.Report{}
			}
			d.Campaigns = append(d.Campaigns, c)
		case FileHuntJSON:
			h := &indexHunt{Dir: dir}
			if rec, err := readIndexJSON[huntRecord](path, FileHuntJSON, MaxIndexCampaign); err != nil {
				h.Problem = err.Error()
			} else {
				h.Hunt = *rec
			}
			d.Hunts = append(d.Hunts, h)
		}
		return nil
	})
	// A run in a hunt's folder is counted in the hunt's row, not read; one
	// in a campaign shard's folder by its campaign's cells.
	for _, r := range runs {
		if h := huntOf(d.Hunts, r[1]); h != nil {
			h.Runs++
			continue
		}
		if slices.ContainsFunc(shards, func(s string) bool { return s == "." || strings.HasPrefix(r[1], s+"/") }) {
			d.ShardRuns++
			continue
		}
		d.Runs = append(d.Runs, readIndexRun(r[0], r[1]))
	}
	return d, err
}

// headOf reads at most limit bytes of a file; cut says whether there was more.
func headOf(path string, limit int64) (data []byte, cut bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	data, err = io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, false, err
	}
	if int64(len(data)) > limit {
		return data[:limit], true, nil
	}
	return data, false, nil
}

// readIndexRun reads the head of a report.json: meta, verdict and matched
// come first in the file, then the result's verdict, observed classes and
// findings; the token reader stops at the first finding, so the holds and
// segments that make a report.json large are never read.
func readIndexRun(path, dir string) *indexRun {
	r := &indexRun{Dir: dir}
	f, err := os.Open(path)
	if err != nil {
		r.Problem = err.Error()
		return r
	}
	defer f.Close()
	// The decoder reads the file in small chunks as it goes: only the head
	// up to the first finding is read, and never more than MaxIndexRead.
	head := &countingReader{r: io.LimitReader(f, MaxIndexRead)}
	defer func() { r.Partial = head.n >= MaxIndexRead }()
	var meta report.Meta
	gotMeta := false
	dec := json.NewDecoder(head)
	err = walkObject(dec, func(key string) (bool, error) {
		switch key {
		case "meta":
			err := dec.Decode(&meta)
			gotMeta = err == nil
			return true, err
		case "verdict":
			return true, dec.Decode(&r.Verdict)
		case "matched":
			return true, dec.Decode(&r.Matched)
		case "result":
			return false, walkObject(dec, func(key string) (bool, error) {
				switch key {
				case "verdict":
					return true, dec.Decode(&r.Verdict)
				case "observed":
					return true, dec.Decode(&r.Observed)
				case "findings":
					// Only the first finding is wanted: read the '[' and one value.
					if t, err := dec.Token(); err != nil || t == nil {
						return false, err
					}
					if dec.More() {
						var f checker.Finding
						if err := dec.Decode(&f); err != nil {
							return false, err
						}
						r.Finding = report.FindingSentence(f)
					}
					return false, errStop
				}
				return true, skipValue(dec)
			})
		}
		return true, skipValue(dec)
	})
	if err != nil && !errors.Is(err, errStop) && !gotMeta {
		r.Problem = fmt.Sprintf("%s: %v", report.FileJSON, err)
	}
	r.Scenario, r.Lock, r.Backend, r.RunID = meta.Scenario, meta.Label(), meta.Backend, meta.RunID
	r.Started, r.Duration, r.Expect, r.Why, r.Error = meta.Started, meta.Duration, meta.Expect, meta.Why, meta.Error
	if !gotMeta && r.Problem == "" {
		r.Problem = report.FileJSON + ": no meta"
	}
	switch {
	case meta.Killed:
		r.Error = "killed: " + meta.Error
	case meta.Interrupted && r.Error == "":
		r.Error = "interrupted"
	}
	return r
}

var errStop = errors.New("stop")

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// walkObject reads a JSON object's '{', then calls each(key) with the
// decoder at the key's value; each reads the value and says whether to go
// on with the next key. It stops at errStop, an error, or the '}'.
func walkObject(dec *json.Decoder, each func(key string) (bool, error)) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("want an object, got %v", t)
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := t.(string)
		more, err := each(key)
		if err != nil {
			return err
		}
		if !more {
			return errStop
		}
	}
	_, err = dec.Token()
	return err
}

// skipValue reads one value and drops it.
func skipValue(dec *json.Decoder) error {
	var v json.RawMessage
	return dec.Decode(&v)
}

// readIndexJSON decodes a suite.json, campaign.json or hunt.json (name)
// of at most limit bytes into a T.
func readIndexJSON[T any](path, name string, limit int64) (*T, error) {
	data, cut, err := headOf(path, limit)
	if err != nil {
		return nil, err
	}
	if cut {
		return nil, fmt.Errorf("%s: larger than %d bytes (allowed: at most %d)", name, limit, limit)
	}
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	return &v, nil
}
