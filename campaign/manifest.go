package campaign

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// MaxManifestSize bounds shard.json (its definition included).
const MaxManifestSize = 8 << 20

// Manifest is shard.json: which shard of which campaign a results folder
// holds, the definition itself (canonical form, so a merge needs nothing
// else to know every run the campaign has), and how far the shard got.
type Manifest struct {
	Campaign       string          `json:"campaign"`
	DefinitionHash string          `json:"definition_hash"`
	Version        string          `json:"lockfault_version"`
	Shard          string          `json:"shard"`
	Assigned       int             `json:"runs_assigned"`
	Done           int             `json:"runs_done"`
	Interrupted    bool            `json:"interrupted,omitempty"`
	Started        time.Time       `json:"started"`
	Finished       time.Time       `json:"finished,omitzero"`
	Definition     json.RawMessage `json:"definition"`
}

func newManifest(def *Definition, shard Shard) *Manifest {
	return &Manifest{Campaign: def.Name, DefinitionHash: def.Hash(), Version: def.Version, Shard: shard.String(),
		Started: time.Now().UTC(), Definition: def.Canonical()}
}

// write replaces dir/shard.json (through a temp file and a rename, so a
// reader never sees half of it).
func (m *Manifest) write(dir string) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, "."+FileManifest+".tmp")
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, FileManifest))
}

// ReadManifest reads a shard.json strictly and checks that its definition
// hashes to the hash it claims.
func ReadManifest(path string) (*Manifest, error) {
	data, err := readBounded(path, MaxManifestSize)
	if err != nil {
		return nil, err
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if _, err := ParseShard(m.Shard); err != nil {
		return nil, fmt.Errorf("%s: shard: %q is not i/N", path, m.Shard)
	}
	def, err := m.Def()
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if h := def.Hash(); h != m.DefinitionHash {
		return nil, fmt.Errorf("%s: definition_hash: the definition hashes to %s, the file says %s (edited by hand?)", path, ShortHash(h), ShortHash(m.DefinitionHash))
	}
	return &m, nil
}

// Def decodes the manifest's definition (with its version).
func (m *Manifest) Def() (*Definition, error) {
	d, err := DecodeCanonical(m.Definition)
	if err != nil {
		return nil, err
	}
	d.Version = m.Version
	return d, nil
}
