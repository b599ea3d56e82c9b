package scenarios

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// variantShape is what a variant may say: its name and the sections it
// overrides (see WithVariant).
type variantShape struct {
	Name       string        `yaml:"name"`
	Lock       Lock          `yaml:"lock"`
	Topology   Topology      `yaml:"topology"`
	Workload   Workload      `yaml:"workload"`
	Nemesis    Nemesis       `yaml:"nemesis"`
	Expect     []string      `yaml:"expect"`
	Allow      []string      `yaml:"allow"`
	StuckAfter Duration      `yaml:"stuck_after"`
	Evidence   *EvidenceSpec `yaml:"evidence"`
}

var (
	typeDuration  = reflect.TypeOf(Duration(0))
	typeStep      = reflect.TypeOf(Step{})
	typeYAMLNode  = reflect.TypeOf(yaml.Node{})
	typeVariant   = reflect.TypeOf(variantShape{})
	typeStringMap = reflect.TypeOf(map[string]string{})
)

// checkShape walks a YAML tree against the Go type it will be decoded into
// and reports the first mistake at its line and field path: an unknown
// field, a list where a mapping belongs, a value that is not a number, a
// duration or true/false. After it passes, decoding cannot fail, so no
// error of the YAML library (with its Go type names) reaches the user.
func checkShape(file string, n *yaml.Node, t reflect.Type, path string) error {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil // an empty value: the field keeps its zero value
	}
	errf := func(format string, args ...any) error {
		p := path
		if p == "" {
			p = "(top level)"
		}
		return fmt.Errorf("%s:%d: %s: %s", file, n.Line, p, fmt.Sprintf(format, args...))
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == typeDuration:
		if n.Kind != yaml.ScalarNode {
			return errf("want a duration (allowed: e.g. 500ms, 2s, 1m), got %s", kindName(n))
		}
		if _, err := parseDuration(n.Value); err != nil {
			return errf("%v", err)
		}
		return nil
	case t == typeStep:
		if n.Kind == yaml.ScalarNode {
			if n.Value != "quiesce" && n.Value != "resume" {
				return errf("%q is not a step (allowed: the bare words quiesce and resume, or a mapping with one of fault, heal, sleep, await)", n.Value)
			}
			return nil
		}
	case t == typeYAMLNode:
		return checkShape(file, n, typeVariant, path)
	}
	switch t.Kind() {
	case reflect.Struct:
		return checkStruct(file, n, t, path, errf)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return errf("want a list, got %s", kindName(n))
		}
		for i, c := range n.Content {
			if err := checkShape(file, c, t.Elem(), join(path, strconv.Itoa(i))); err != nil {
				return err
			}
		}
		return nil
	case reflect.Map:
		return checkMap(file, n, t, path, errf)
	}
	return checkScalar(n, t, errf)
}

// checkStruct checks a mapping against a struct's YAML fields (a merge key
// "<<" against the same struct).
func checkStruct(file string, n *yaml.Node, t reflect.Type, path string, errf func(string, ...any) error) error {
	if n.Kind != yaml.MappingNode {
		return errf("want a mapping of %s, got %s", strings.Join(fieldNames(t), ", "), kindName(n))
	}
	fields := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := strings.Split(f.Tag.Get("yaml"), ",")[0]
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		fields[name] = f.Type
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if err := checkKey(file, k, path); err != nil {
			return err
		}
		if k.Value == "<<" {
			if err := checkShape(file, v, t, path); err != nil {
				return err
			}
			continue
		}
		ft, ok := fields[k.Value]
		if !ok {
			return fmt.Errorf("%s:%d: %s: unknown field (allowed: %s)", file, k.Line, join(path, k.Value), strings.Join(fieldNames(t), ", "))
		}
		if err := checkShape(file, v, ft, join(path, k.Value)); err != nil {
			return err
		}
	}
	return nil
}

// checkMap checks a mapping of plain-word names to values of t's element
// type.
func checkMap(file string, n *yaml.Node, t reflect.Type, path string, errf func(string, ...any) error) error {
	if n.Kind != yaml.MappingNode {
		return errf("want a mapping of names to values, got %s", kindName(n))
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return fmt.Errorf("%s:%d: %s: a key must be a plain word", file, k.Line, path)
		}
		if err := checkKey(file, k, path); err != nil {
			return err
		}
		if err := checkShape(file, v, t.Elem(), join(path, k.Value)); err != nil {
			return err
		}
	}
	return nil
}

// checkScalar checks a single value against a string, a whole number (in
// range for an int) or true/false.
func checkScalar(n *yaml.Node, t reflect.Type, errf func(string, ...any) error) error {
	switch t.Kind() {
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			return errf("want a single value, got %s", kindName(n))
		}
		return nil
	case reflect.Int, reflect.Int64:
		if n.Kind != yaml.ScalarNode {
			return errf("want a whole number, got %s", kindName(n))
		}
		if _, err := strconv.ParseInt(n.Value, 0, 64); err != nil || n.Tag != "!!int" {
			return errf("%q is not a whole number", n.Value)
		}
		if t.Kind() == reflect.Int {
			v, _ := strconv.ParseInt(n.Value, 0, 64)
			if v != int64(int(v)) {
				return errf("%q is out of range", n.Value)
			}
		}
		return nil
	case reflect.Bool:
		var b bool
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || n.Decode(&b) != nil {
			return errf("%q is not true or false", n.Value)
		}
		return nil
	}
	return errf("unexpected value")
}

// fieldNames lists a struct's YAML field names in declaration order.
func fieldNames(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := strings.Split(f.Tag.Get("yaml"), ",")[0]
		if name != "" && name != "-" && f.IsExported() {
			out = append(out, name)
		}
	}
	return out
}

// kindName names a node's kind for messages.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return fmt.Sprintf("%q", n.Value)
}

// parseDuration parses a scenario duration: a Go duration string such as
// 500ms or 2s (or 0), not negative, at most MaxDuration.
func parseDuration(s string) (time.Duration, error) {
	if s == "0" {
		return 0, nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (allowed: e.g. 500ms, 2s, 1m)", s)
	}
	if v < 0 {
		return 0, fmt.Errorf("%q is negative (allowed: 0 to %v)", s, MaxDuration)
	}
	if v > MaxDuration {
		return 0, fmt.Errorf("%q is too long (allowed: 0 to %v)", s, MaxDuration)
	}
	return v, nil
}
