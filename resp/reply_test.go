package resp

import (
	"strings"
	"testing"
)

func TestReplyParser(t *testing.T) {
	deep := strings.Repeat("*1\r\n", MaxDepth) + ":1\r\n"
	tooDeep := strings.Repeat("*1\r\n", MaxDepth+1) + ":1\r\n"
	cases := []struct {
		name string
		in   string
		want []string // replySummary of each reply
		err  string
	}{
		{"ok", "+OK\r\n", []string{`simple code="" text="OK" int=0 len=0 size=5`}, ""},
		{"queued", "+QUEUED\r\n", []string{`queued code="" text="QUEUED" int=0 len=0 size=9`}, ""},
		{"error", "-NOSCRIPT No matching script.\r\n", []string{`error code="NOSCRIPT" text="NOSCRIPT No matching script." int=0 len=0 size=31`}, ""},
		{"integer", ":-42\r\n", []string{`integer code="" text="" int=-42 len=0 size=6`}, ""},
		{"bulk", "$5\r\nhe\r\no\r\n", []string{`bulk code="" text="he\r\no" int=0 len=5 size=11`}, ""},
		{"empty bulk", "$0\r\n\r\n", []string{`bulk code="" text="" int=0 len=0 size=6`}, ""},
		{"nulls", "$-1\r\n*-1\r\n_\r\n", []string{
			`nil code="" text="" int=0 len=0 size=5`, `nil code="" text="" int=0 len=0 size=5`, `nil code="" text="" int=0 len=0 size=3`}, ""},
		{"array", "*3\r\n:1\r\n$1\r\na\r\n*1\r\n+x\r\n", []string{`array code="" text="" int=0 len=3 size=23`}, ""},
		{"empty array", "*0\r\n", []string{`array code="" text="" int=0 len=0 size=4`}, ""},
		{"map set", "%2\r\n+a\r\n:1\r\n+b\r\n~1\r\n#t\r\n~0\r\n", []string{
			`map code="" text="" int=0 len=2 size=24`, `set code="" text="" int=0 len=0 size=4`}, ""},
		{"double bool bignum", ",1.5e+10\r\n#f\r\n(-12345678901234567890\r\n", []string{
			`double code="" text="1.5e+10" int=0 len=0 size=10`,
			`boolean code="" text="" int=0 len=0 size=4`,
			`bignumber code="" text="-12345678901234567890" int=0 len=0 size=24`}, ""},
		{"blob error", "!21\r\nSYNTAX invalid syntax\r\n", []string{`error code="SYNTAX" text="SYNTAX invalid syntax" int=0 len=21 size=28`}, ""},
		{"verbatim", "=15\r\ntxt:Some string\r\n", []string{`verbatim code="" text="Some string" int=0 len=15 size=22`}, ""},
		{"attribute before reply", "|1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.19\r\n*2\r\n:2039123\r\n:9543892\r\n", []string{
			`array code="" text="" int=0 len=2 size=63`}, ""},
		{"attribute inside array", "*3\r\n:1\r\n:2\r\n|1\r\n+ttl\r\n:3600\r\n:3\r\n", []string{`array code="" text="" int=0 len=3 size=33`}, ""},
		{"empty attribute", "|0\r\n:7\r\n", []string{`integer code="" text="" int=7 len=0 size=8`}, ""},
		{"push then reply", ">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n$1\r\nv\r\n", []string{
			`push code="" text="" int=0 len=2 size=32`, `bulk code="" text="v" int=0 len=1 size=7`}, ""},
		{"streamed string", "$?\r\n;4\r\nHell\r\n;5\r\no wor\r\n;1\r\nd\r\n;0\r\n", []string{
			`bulk code="" text="Hello word" int=0 len=10 size=36`}, ""},
		{"streamed array", "*?\r\n:1\r\n*?\r\n.\r\n:3\r\n.\r\n", []string{`array code="" text="" int=0 len=3 size=22`}, ""},
		{"streamed map", "%?\r\n+a\r\n:1\r\n+b\r\n:2\r\n.\r\n", []string{`map code="" text="" int=0 len=2 size=23`}, ""},
		{"deepest nesting", deep, []string{`array code="" text="" int=0 len=1 size=260`}, ""},
		{"too deep", tooDeep, nil, "nested deeper"},
		{"unknown type", "?x\r\n", nil, "unknown type"},
		{"push nested", "*1\r\n>1\r\n", nil, "push inside"},
		{"dot outside stream", "*1\r\n.\r\n", nil, "outside a streamed"},
		{"bad integer", ":12a\r\n", nil, "integer"},
		{"bad boolean", "#x\r\n", nil, "boolean"},
		{"null with data", "_x\r\n", nil, "null"},
		{"bulk too long", "$536870913\r\n", nil, "allowed: 0 to"},
		{"negative count", "%-1\r\n", nil, "allowed: 0 to"},
		{"count too large", "*67108865\r\n", nil, "allowed: 0 to"},
		{"bulk not ended", "$1\r\nab\r\n", nil, "not ended"},
		{"line without CR", "+OK\n", nil, `not ended by "\r\n"`},
		{"simple too long", "+" + strings.Repeat("x", MaxSimpleLen+1) + "\r\n", nil, "longer than"},
		{"stream chunk expected", "$?\r\n:1\r\n", nil, "expected ';'"},
		{"attribute streamed", "|?\r\n", nil, "count"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { checkFraming(t, frameReplies, tc.in, tc.want, tc.err) })
	}
}

func TestReplyOK(t *testing.T) {
	cases := []struct {
		in string
		ok bool
	}{
		{"+OK\r\n", true}, {":1\r\n", true}, {":0\r\n", false}, {"$1\r\nx\r\n", true},
		{"$-1\r\n", false}, {"_\r\n", false}, {"-ERR x\r\n", false}, {"#f\r\n", false},
		{"#t\r\n", true}, {"+QUEUED\r\n", false}, {"*0\r\n", true}, {"*-1\r\n", false},
	}
	for _, tc := range cases {
		var p ReplyParser
		_, r, err := p.Feed([]byte(tc.in))
		if err != nil || r == nil {
			t.Fatalf("%q: reply %v, error %v", tc.in, r, err)
		}
		if r.OK() != tc.ok {
			t.Errorf("%q (%s): OK()=%v, want %v", tc.in, r, r.OK(), tc.ok)
		}
	}
}
