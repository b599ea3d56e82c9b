package campaign

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"regexp"
)

// RunSpec is one run of a campaign: a subject on an item, the n-th time.
type RunSpec struct {
	// Campaign is the definition's name, DefinitionHash its hash and
	// Version lockfault's version string.
	Campaign       string
	DefinitionHash string
	Version        string
	Subject        Subject
	Item           Item
	// Repetition counts from 1.
	Repetition int
	// Identity is "subject | item | repetition", the same on every
	// machine: shards are assigned by it and merge refuses two results
	// of one identity.
	Identity string
	// Expect is what the cell is expected to show (the executor need not
	// read it: a run reports what happened, the merge compares).
	Expect Expectation
	// Shard is the shard that runs it.
	Shard Shard
	// Dir is the folder the executor writes this run's reports into,
	// inside the results folder (set by Run).
	Dir string
}

// CellKey is the identity of a subject × item cell: "subject | item".
func CellKey(s Subject, it Item) string { return s.Key() + " | " + it.Key() }

// Identity of one run: "lock=single | property:exclusion/no-faults | 3".
func Identity(s Subject, it Item, repetition int) string {
	return fmt.Sprintf("%s | %d", CellKey(s, it), repetition)
}

// Enumerate lists every run of the campaign, repetition by repetition
// (the first repetition of every cell comes before any second), so a
// campaign cut short still covers every cell.
func (d *Definition) Enumerate() []RunSpec {
	hash := d.Hash()
	out := make([]RunSpec, 0, d.Runs())
	for r := 1; r <= d.Repetitions; r++ {
		for _, s := range d.Subjects {
			for _, it := range d.Items {
				out = append(out, RunSpec{Campaign: d.Name, DefinitionHash: hash, Version: d.Version,
					Subject: s, Item: it, Repetition: r, Identity: Identity(s, it, r), Expect: d.Expect(s, it)})
			}
		}
	}
	return out
}

var unsafePath = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// RunDir is a run's folder relative to the results folder, readable and
// unique: runs/<subject>/<item>-<hash of the cell>/<repetition>.
func RunDir(s Subject, it Item, repetition int) string {
	sum := sha256.Sum256([]byte(CellKey(s, it)))
	return path.Join("runs", safeName(s.Label()), safeName(it.Key())+"-"+hex.EncodeToString(sum[:3]), fmt.Sprintf("r%04d", repetition))
}

func safeName(s string) string {
	s = unsafePath.ReplaceAllString(s, "_")
	if len(s) > 48 {
		s = s[:48]
	}
	if s == "" || s == "." || s == ".." {
		return "_"
	}
	return s
}
