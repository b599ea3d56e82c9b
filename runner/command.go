package runner

import (
	"fmt"
	"strings"
)

// SplitCommand splits a worker command line into words the way a POSIX
// shell would, without running one: words are separated by blanks; single
// quotes keep everything literally; double quotes keep blanks, and a
// backslash in them escapes only $ ` " \ and newline; outside quotes a
// backslash escapes the next character. Nothing is expanded: no variables,
// globs, ~, or command substitution, and operators such as | ; & < > are
// refused rather than taken as words.
func SplitCommand(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	const (
		plain = iota
		single
		double
	)
	state := plain
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch state {
		case single:
			if c == '\'' {
				state = plain
			} else {
				cur.WriteRune(c)
			}
		case double:
			switch {
			case c == '"':
				state = plain
			case c == '\\' && i+1 < len(rs) && strings.ContainsRune("$`\"\\\n", rs[i+1]):
				i++
				if rs[i] != '\n' {
					cur.WriteRune(rs[i])
				}
			case c == '$' || c == '`':
				return nil, fmt.Errorf("-worker: %q at offset %d: no expansion is done (no shell runs the command); quote it with '...'", string(c), i)
			default:
				cur.WriteRune(c)
			}
		default:
			switch {
			case c == ' ' || c == '\t' || c == '\n':
				if inWord {
					words = append(words, cur.String())
					cur.Reset()
					inWord = false
				}
				continue
			case c == '\'':
				state = single
			case c == '"':
				state = double
			case c == '\\':
				if i+1 >= len(rs) {
					return nil, fmt.Errorf("-worker: a backslash ends the command")
				}
				i++
				if rs[i] == '\n' {
					continue
				}
				cur.WriteRune(rs[i])
			case strings.ContainsRune("|&;<>()$`*?[", c), (c == '~' || c == '#') && !inWord:
				return nil, fmt.Errorf("-worker: %q at offset %d: no shell runs the command, so shell syntax is not allowed; quote it with '...' if it is part of a word", string(c), i)
			default:
				cur.WriteRune(c)
			}
			inWord = true
		}
	}
	if state != plain {
		return nil, fmt.Errorf("-worker: unterminated quote in %q", s)
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("-worker: empty command")
	}
	return words, nil
}

// JoinCommand is the inverse of SplitCommand, for messages: words that need
// it are single-quoted.
func JoinCommand(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
		}) < 0 {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}
