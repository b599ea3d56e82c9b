package campaign

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// YAML is the definition as a definition file (the form Parse reads): what
// `simulate campaign -emit k8s` puts in the Job's ConfigMap for a campaign
// given by flags. Items are written expanded (a property prefix as every
// property under it, a seed range as its seeds); a scenario file keeps its
// name, relative to the folder the file is written in.
func (d *Definition) YAML() ([]byte, error) {
	type subject struct {
		Lock   string             `yaml:"lock,omitempty"`
		Worker string             `yaml:"worker,omitempty"`
		Known  []string           `yaml:"known,omitempty,flow"`
		Expect map[string]Outcome `yaml:"expect,omitempty"`
	}
	type item struct {
		Property string  `yaml:"property,omitempty"`
		Scenario string  `yaml:"scenario,omitempty"`
		Hunt     *int64  `yaml:"hunt,omitempty"`
		Search   string  `yaml:"search,omitempty"`
		Expect   Outcome `yaml:"expect,omitempty"`
	}
	var f struct {
		Name        string    `yaml:"name"`
		Repetitions int       `yaml:"repetitions"`
		Subjects    []subject `yaml:"subjects"`
		Items       []item    `yaml:"items"`
	}
	f.Name, f.Repetitions = d.Name, d.Repetitions
	for _, s := range d.Subjects {
		fs := subject{Lock: s.Lock, Worker: s.Worker, Known: s.Known}
		for key, o := range s.Expect {
			// A subject's expectations are by item key; the file names
			// the item alone.
			_, name, ok := strings.Cut(key, ":")
			if !ok {
				return nil, fmt.Errorf("subject %s: expectation for %q: not an item key", s.Label(), key)
			}
			if fs.Expect == nil {
				fs.Expect = map[string]Outcome{}
			}
			fs.Expect[name] = o
		}
		f.Subjects = append(f.Subjects, fs)
	}
	for _, it := range d.Items {
		fi := item{Expect: it.Expect}
		switch it.Kind {
		case KindProperty:
			fi.Property = it.Name
		case KindScenario:
			fi.Scenario = it.Name
		case KindHunt:
			seed, err := strconv.ParseInt(it.Name, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("hunt item %q: %v", it.Name, err)
			}
			fi.Hunt, fi.Search = &seed, it.Search
		default:
			return nil, fmt.Errorf("item %s: unknown kind", it.Key())
		}
		f.Items = append(f.Items, fi)
	}
	out, err := yaml.Marshal(&f)
	if err != nil {
		return nil, err
	}
	return append([]byte("# lockfault campaign "+d.Name+", written from simulate campaign's flags\n"), out...), nil
}
