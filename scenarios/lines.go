package scenarios

import (
	"fmt"
	"regexp"
	"strings"
)

var (
	lineRE = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
	// goTypeRE matches the Go type names the YAML library puts in its
	// messages ("into int", "in type scenarios.Topology").
	goTypeRE = regexp.MustCompile(` (?:into|in type) [\w.\[\]*]+`)
)

// prefixLines rewrites a YAML library error ("yaml: line N: msg", or a list
// of "line N: msg" under "yaml: unmarshal errors:") into lines of the form
// "file:N: msg", without the library's Go type names. A message with no
// line of its own (an unexpected end of the file) gets lastLine.
func prefixLines(err error, file string, lastLine int) error {
	var out []string
	for _, l := range strings.Split(err.Error(), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || l == "yaml: unmarshal errors:" {
			continue
		}
		l = goTypeRE.ReplaceAllString(l, "")
		if m := lineRE.FindStringSubmatch(l); m != nil {
			out = append(out, fmt.Sprintf("%s:%s: %s", file, m[1], m[2]))
			continue
		}
		out = append(out, fmt.Sprintf("%s:%d: %s", file, lastLine, strings.TrimPrefix(l, "yaml: ")))
	}
	if len(out) == 0 {
		return fmt.Errorf("%s:%d: %v", file, lastLine, err)
	}
	return fmt.Errorf("%s", strings.Join(out, "\n"))
}
