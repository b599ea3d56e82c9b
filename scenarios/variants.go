package scenarios

import (
	"fmt"

	"gopkg.in/yaml.v3"

	"github.com/lockfault/lockfault"
)

// variantHead is what every variant must say about itself.
type variantHead struct {
	Name string `yaml:"name"`
}

// VariantNames lists the variants, base first ("" is the base).
func (s *Scenario) VariantNames() []string {
	out := []string{""}
	for i := range s.Variants {
		var h variantHead
		s.Variants[i].Decode(&h)
		out = append(out, h.Name)
	}
	return out
}

// WithVariant returns a copy of the scenario as the named variant ("": the
// base): a copy of the base
// with the variant's sections (lock, topology, workload, nemesis, expect,
// allow, stuck_after) decoded on top, so it overrides only what it names.
func (s *Scenario) WithVariant(name string) (*Scenario, error) {
	if name == "" {
		return s.clone(), nil
	}
	for i := range s.Variants {
		n := &s.Variants[i]
		var h variantHead
		if err := n.Decode(&h); err != nil || h.Name != name {
			continue
		}
		v := s.clone()
		v.Variant = name
		v.prefix = fmt.Sprintf("variants.%d.", i)
		v.Expect, v.Allow = nil, nil
		expectSet := false
		for j := 0; j+1 < len(n.Content); j += 2 {
			key, val := n.Content[j].Value, n.Content[j+1]
			var err error
			switch key {
			case "name":
			case "lock":
				// Options given by the variant replace the base's (the
				// base's belong to the base's lock); decoding into the
				// copied map would merge them, and `options: {}` would keep
				// every base option.
				if hasKey(val, "options") {
					v.Lock.Options = map[string]string{}
				}
				err = val.Decode(&v.Lock)
			case "topology":
				// Another kind starts from an empty topology: the base's
				// replicas or masters do not apply to it.
				var k struct {
					Kind lockfault.TopologyKind `yaml:"kind"`
				}
				if val.Decode(&k); k.Kind != "" && k.Kind != v.Topology.Kind {
					v.Topology = Topology{Password: v.Topology.Password}
					if k.Kind == lockfault.Etcd {
						v.Topology.Password = ""
					}
				}
				err = val.Decode(&v.Topology)
			case "workload":
				err = val.Decode(&v.Workload)
			case "nemesis":
				err = val.Decode(&v.Nemesis)
				if v.Nemesis.Random != nil && hasKey(val, "random") {
					v.Nemesis.Random.Line = 0
				}
			case "expect":
				err = val.Decode(&v.Expect)
				expectSet = true
			case "allow":
				err = val.Decode(&v.Allow)
			case "stuck_after":
				err = val.Decode(&v.StuckAfter)
			case "evidence":
				// What a cycle must show belongs to the lock and schedule
				// the variant runs: its section replaces the base's.
				v.Evidence = nil
				err = val.Decode(&v.Evidence)
			default:
				err = fmt.Errorf("line %d: unknown field %q (allowed: name, lock, topology, workload, nemesis, expect, allow, stuck_after, evidence)", n.Content[j].Line, key)
			}
			if err != nil {
				return nil, inVariant(name, prefixLines(err, s.File, n.Line))
			}
		}
		if !expectSet {
			v.Expect, v.Allow = s.Expect, s.Allow
		}
		if err := v.Validate(); err != nil {
			return nil, inVariant(name, err)
		}
		return v, nil
	}
	return nil, fmt.Errorf("%s: no variant %q (have: %v)", s.File, name, s.VariantNames()[1:])
}

// clone copies the scenario deeply enough that decoding a variant on top
// leaves the base untouched.
func (s *Scenario) clone() *Scenario {
	c := *s
	c.Lock.Options = map[string]string{}
	for k, v := range s.Lock.Options {
		c.Lock.Options[k] = v
	}
	c.Nemesis.Steps = append([]Step(nil), s.Nemesis.Steps...)
	if s.Nemesis.Random != nil {
		r := *s.Nemesis.Random
		r.Faults = append([]string(nil), r.Faults...)
		r.Targets = append([]string(nil), r.Targets...)
		c.Nemesis.Random = &r
	}
	c.Expect = append([]string(nil), s.Expect...)
	c.Allow = append([]string(nil), s.Allow...)
	return &c
}

// hasKey reports whether a mapping node has the key.
func hasKey(n *yaml.Node, key string) bool {
	if n.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return true
		}
	}
	return false
}

// inVariant names the variant an error is about, after the error's own
// file:line: field: text, so every refusal still begins with file:line.
func inVariant(name string, err error) error {
	return fmt.Errorf("%w (in variant %q)", err, name)
}
