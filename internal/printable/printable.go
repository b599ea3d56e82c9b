// Package printable says whether text a user hands to lockfault (a name in
// a scenario, a property in a baseline) is safe to print and to use as a
// name: valid UTF-8 without control characters, Unicode format characters
// (among them the bidirectional overrides that make text read differently
// than it is) or line separators.
package printable

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// Find returns the first character of s that does not belong in a name, as
// "control character U+0007" (what), and its place in characters from 1
// (at); bad is false when there is none. In multi-line text a newline or a
// tab is fine. Refused: invalid UTF-8, control characters, the
// bidirectional overrides and isolates U+202A–U+202E and U+2066–U+2069,
// every other format character (category Cf: zero-width joiners, the byte
// order mark, ...), and the line and paragraph separators.
func Find(s string, multiLine bool) (what string, at int, bad bool) {
	for i, r := range s {
		at++
		switch {
		case r == utf8.RuneError && !realRuneError(s[i:]):
			return fmt.Sprintf("byte 0x%02X, which is not UTF-8,", s[i]), at, true
		case multiLine && (r == '\n' || r == '\t'):
		case unicode.IsControl(r):
			return fmt.Sprintf("control character %U", r), at, true
		case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
			return fmt.Sprintf("bidirectional override %U", r), at, true
		case unicode.Is(unicode.Cf, r):
			return fmt.Sprintf("format character %U", r), at, true
		case unicode.In(r, unicode.Zl, unicode.Zp):
			return fmt.Sprintf("line separator %U", r), at, true
		}
	}
	return "", 0, false
}

// Allowed says what Find lets through, for messages.
func Allowed(multiLine bool) string {
	if multiLine {
		return "printable text, new lines and tabs; no other control or format character"
	}
	return "printable text; no control or format character"
}

// realRuneError: s starts with an encoded U+FFFD, not an invalid byte.
func realRuneError(s string) bool {
	_, size := utf8.DecodeRuneInString(s)
	return size == 3
}
