package scenarios

import (
	"bytes"

	"gopkg.in/yaml.v3"
)

// Marshal writes the scenario as it will run (variant applied, overrides
// and defaults filled in, no variants) in the YAML format Parse reads: the
// runner puts it in the report folder as scenario.yaml, so a run can be
// re-checked, or repeated, from its folder alone.
func (s *Scenario) Marshal() ([]byte, error) {
	c := s.clone()
	c.Variants = nil
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(c); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// MarshalYAML writes a step with only the fields it sets (the bare words
// quiesce and resume as such).
func (s Step) MarshalYAML() (any, error) {
	switch {
	case s.Quiesce:
		return "quiesce", nil
	case s.Resume:
		return "resume", nil
	}
	m := yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
	add := func(k string, v any) {
		var vn yaml.Node
		vn.Encode(v)
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, &vn)
	}
	if s.Fault != "" {
		add("fault", s.Fault)
	}
	if s.Target != "" {
		add("target", s.Target)
	}
	if s.For > 0 {
		add("for", s.For.D().String())
	}
	if len(s.Params) > 0 {
		add("params", s.Params)
	}
	if s.Heal != "" {
		add("heal", s.Heal)
	}
	if s.Sleep > 0 {
		add("sleep", s.Sleep.D().String())
	}
	if s.Await != "" {
		add("await", s.Await)
	}
	if s.Command != nil {
		add("command", s.Command)
	}
	if s.Within > 0 {
		add("within", s.Within.D().String())
	}
	if s.By != "" {
		add("by", s.By)
	}
	return &m, nil
}
