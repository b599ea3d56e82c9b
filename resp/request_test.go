package resp

import (
	"crypto/sha1"
	"encoding/hex"
	"strings"
	"testing"
)

func sha1hex(s string) string {
	h := sha1.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}

func TestRequestParser(t *testing.T) {
	script := "return redis.call('del', KEYS[1])"
	big := strings.Repeat("v", MaxArgKept+10)
	cases := []struct {
		name string
		in   string
		want []string // cmdSummary of each command
		err  string   // substring of the error, "" for none
	}{
		{"set", resp("set", "k", "v"), []string{`SET argc=3 argv=["set" "k" "v"] keys=["k"] size=27`}, ""},
		{"pipeline", resp("GET", "a") + resp("DEL", "a", "b"), []string{
			`GET argc=2 argv=["GET" "a"] keys=["a"] size=20`,
			`DEL argc=3 argv=["DEL" "a" "b"] keys=["a" "b"] size=27`}, ""},
		{"empty commands skipped", "*0\r\n*-1\r\n\r\n" + resp("PING"), []string{
			`PING argc=1 argv=["PING"] keys=[] size=14`}, ""},
		{"inline", "set k \"a b\\x41\" 'it\\'s'\r\nget k\n", []string{
			`SET argc=4 argv=["set" "k" "a bA" "it's"] keys=["k"] size=25 inline`,
			`GET argc=2 argv=["get" "k"] keys=["k"] size=6 inline`}, ""},
		{"eval", resp("EVAL", script, "1", "lock:a", "tok"), []string{
			`EVAL argc=5 argv=["EVAL" "` + script + `" "1" "lock:a" "tok"] keys=["lock:a"] size=82 sha=` + sha1hex(script)}, ""},
		{"script load", resp("script", "load", script), []string{
			`SCRIPT LOAD argc=3 argv=["script" "load" "` + script + `"] keys=[] size=66 sha=` + sha1hex(script)}, ""},
		{"long value kept short", resp("SET", "k", big), []string{
			`SET argc=3 argv=["SET" "k" "` + big[:MaxArgKept] + `"] keys=["k"] size=1063 truncated`}, ""},
		{"empty argument", resp("GET", ""), []string{`GET argc=2 argv=["GET" ""] keys=[""] size=19`}, ""},
		{"binary argument", resp("SET", "k\r\n", "\x00\xff"), []string{
			`SET argc=3 argv=["SET" "k\r\n" "\x00\xff"] keys=["k\r\n"] size=30`}, ""},
		{"count not a number", "*x\r\n", nil, "argument count"},
		{"leading zero", "*01\r\n", nil, "bad integer"},
		{"no dollar", "*1\r\n+PING\r\n", nil, "expected '$'"},
		{"negative length", "*1\r\n$-1\r\n", nil, "allowed: 0 to"},
		{"bulk not ended", "*1\r\n$4\r\nPINGxx", nil, "not ended"},
		{"header without CR", "*1\n", nil, `not ended by "\r\n"`},
		{"too many args", "*1048577\r\n", nil, "over 1048576"},
		{"bulk too long", "*1\r\n$536870913\r\n", nil, "allowed: 0 to"},
		{"header too long", "*" + strings.Repeat("1", MaxHeaderLen+1) + "\r\n", nil, "longer than"},
		{"inline too long", strings.Repeat("a", MaxInlineLen+2), nil, "longer than"},
		{"unbalanced quotes", "get \"k\r\n", nil, "unbalanced"},
		{"quote then letter", "get \"k\"x\r\n", nil, "closing quote"},
		{"NUL in inline", "get k\x00\r\n", nil, "NUL"},
		{"error after a command", resp("PING") + "*z\r\n", []string{`PING argc=1 argv=["PING"] keys=[] size=14`}, "argument count"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { checkFraming(t, frameRequests, tc.in, tc.want, tc.err) })
	}
}

// A parser after an error stays spent.
func TestRequestParserSpent(t *testing.T) {
	var p RequestParser
	if _, _, err := p.Feed([]byte("*x\r\n")); err == nil {
		t.Fatal("no error for *x")
	}
	n, c, err := p.Feed([]byte(resp("PING")))
	if n != 0 || c != nil || err == nil {
		t.Fatalf("after an error: n=%d cmd=%v err=%v, want 0, nil, the error", n, c, err)
	}
}

// The script's SHA covers the whole text even where the kept text is cut.
func TestRequestScriptSHAOfWholeText(t *testing.T) {
	script := "return 1 --" + strings.Repeat("x", MaxScriptKept)
	var p RequestParser
	_, c, err := p.Feed([]byte(resp("EVAL", script, "0")))
	if err != nil || c == nil {
		t.Fatalf("cmd=%v err=%v", c, err)
	}
	if c.SHA != sha1hex(script) || len(c.Script) != MaxScriptKept || !c.Truncated {
		t.Fatalf("sha=%s (want %s) kept=%d truncated=%v", c.SHA, sha1hex(script), len(c.Script), c.Truncated)
	}
}
