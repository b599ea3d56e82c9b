package printable

import "testing"

func TestFind(t *testing.T) {
	cases := []struct {
		in        string
		multiLine bool
		what      string
		at        int
	}{
		{"plain-name_1", false, "", 0},
		{"zürich ロック \uFFFD", false, "", 0},
		{"a\nb\tc", true, "", 0},
		{"a\nb", false, "control character U+000A", 2},
		{"ab\x07", false, "control character U+0007", 3},
		{"a\x7F", false, "control character U+007F", 2},
		{"a\u0085", false, "control character U+0085", 2},
		{"x\u202Ay", false, "bidirectional override U+202A", 2},
		{"x\u202E", true, "bidirectional override U+202E", 2},
		{"\u2066x", false, "bidirectional override U+2066", 1},
		{"x\u2069", false, "bidirectional override U+2069", 2},
		{"x\u200By", false, "format character U+200B", 2},
		{"\uFEFFx", false, "format character U+FEFF", 1},
		{"x\u2028", true, "line separator U+2028", 2},
		{"x\u2029", false, "line separator U+2029", 2},
		{"x\xffy", false, "byte 0xFF, which is not UTF-8,", 2},
	}
	for _, c := range cases {
		what, at, bad := Find(c.in, c.multiLine)
		if what != c.what || at != c.at || bad != (c.what != "") {
			t.Errorf("Find(%q, %v) = %q, %d, %v; want %q, %d", c.in, c.multiLine, what, at, bad, c.what, c.at)
		}
	}
}
