package resp

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestDescribeKeys(t *testing.T) {
	cases := []struct {
		argv    []string
		keys    []string
		write   bool
		guessed bool
	}{
		{[]string{"get", "k"}, []string{"k"}, false, false},
		{[]string{"SET", "k", "v", "NX", "PX", "100"}, []string{"k"}, true, false},
		{[]string{"SETNX", "k", "v"}, []string{"k"}, true, false},
		{[]string{"GETSET", "k", "v"}, []string{"k"}, true, false},
		{[]string{"GETDEL", "k"}, []string{"k"}, true, false},
		{[]string{"DEL", "a", "b", "c"}, []string{"a", "b", "c"}, true, false},
		{[]string{"UNLINK", "a", "b"}, []string{"a", "b"}, true, false},
		{[]string{"EXISTS", "a", "b"}, []string{"a", "b"}, false, false},
		{[]string{"PEXPIRE", "k", "100"}, []string{"k"}, true, false},
		{[]string{"EXPIREAT", "k", "100"}, []string{"k"}, true, false},
		{[]string{"PEXPIREAT", "k", "100"}, []string{"k"}, true, false},
		{[]string{"PERSIST", "k"}, []string{"k"}, true, false},
		{[]string{"PTTL", "k"}, []string{"k"}, false, false},
		{[]string{"INCRBY", "k", "2"}, []string{"k"}, true, false},
		{[]string{"HSET", "h", "f", "v", "g", "w"}, []string{"h"}, true, false},
		{[]string{"HINCRBY", "h", "f", "1"}, []string{"h"}, true, false},
		{[]string{"HGETALL", "h"}, []string{"h"}, false, false},
		{[]string{"MSET", "a", "1", "b", "2"}, []string{"a", "b"}, true, false},
		{[]string{"MGET", "a", "b"}, []string{"a", "b"}, false, false},
		{[]string{"WATCH", "a", "b"}, []string{"a", "b"}, false, false},
		{[]string{"PUBLISH", "ch", "msg"}, []string{"ch"}, false, false},
		{[]string{"EVAL", "s", "2", "a", "b", "arg"}, []string{"a", "b"}, true, false},
		{[]string{"EVALSHA_RO", "x", "1", "a", "arg"}, []string{"a"}, false, false},
		{[]string{"FCALL", "f", "1", "a"}, []string{"a"}, true, false},
		{[]string{"EVAL", "s", "3", "a"}, nil, true, false},  // numkeys beyond the arguments
		{[]string{"EVAL", "s", "-1", "a"}, nil, true, false}, // bad numkeys
		{[]string{"EVAL", "s", "0"}, nil, true, false},
		{[]string{"MULTI"}, nil, false, false},
		{[]string{"XADD", "stream", "*", "f", "v"}, []string{"stream"}, false, true},
		{[]string{"NOSUCH"}, nil, false, false},
	}
	for _, tc := range cases {
		c := describe(tc.argv, len(tc.argv), "", false, false)
		if !slices.Equal(c.Keys, tc.keys) || c.Write != tc.write || c.KeysGuessed != tc.guessed {
			t.Errorf("%q: keys %q write %v guessed %v; want %q %v %v", tc.argv, c.Keys, c.Write, c.KeysGuessed, tc.keys, tc.write, tc.guessed)
		}
	}
}

func TestDescribeNames(t *testing.T) {
	c := describe([]string{"script", "load", "return 1"}, 3, "abc", false, false)
	if c.FullName() != "SCRIPT LOAD" || !c.Is("script") || !c.Is("Script Load") || c.Is("LOAD") || !c.SetUp() || c.Script != "return 1" || c.SHA != "abc" {
		t.Errorf("SCRIPT LOAD: %+v", c)
	}
	c = describe([]string{"EVALSHA", "ABCDEF", "0"}, 3, "", false, false)
	if c.SHA != "abcdef" || c.Script != "" || c.SetUp() || !c.Is("evalsha") {
		t.Errorf("EVALSHA: %+v", c)
	}
	if c := describe([]string{"GET", "k"}, 2, "", false, false); c.Sub != "" || c.String() != `GET keys=["k"]` {
		t.Errorf("GET: sub %q, string %q", c.Sub, c.String())
	}
}

func TestKeyPattern(t *testing.T) {
	cases := map[string]string{
		"lock:order-17":                 "lock:order-*",
		"lock:res1":                     "lock:res*",
		"lock:b1":                       "lock:b*",
		"{lock}:redisson_lock__channel": "{lock}:redisson_lock__channel",
		"lock:550e8400-e29b-41d4-a716-446655440000": "lock:*-*-*-*-*",
		"tok:deadbeef12": "tok:*",
		"a*b?[c]\\":      `a\*b\?\[c\]\\`,
		"12":             "*",
		"":               "",
	}
	for key, want := range cases {
		got := KeyPattern(key)
		if got != want {
			t.Errorf("KeyPattern(%q) = %q, want %q", key, got, want)
		}
		if Validate := (Trigger{Key: got}).Validate(); Validate != nil {
			t.Errorf("KeyPattern(%q) = %q is not a valid glob: %v", key, got, Validate)
		}
		c := &Command{Name: "GET", Keys: []string{key}}
		tr := Trigger{Key: got}
		if key != "" && !tr.matches(AtRequest, "", "", c, nil) {
			t.Errorf("KeyPattern(%q) = %q does not match the key", key, got)
		}
	}
}

func TestTriggerValidate(t *testing.T) {
	cases := []struct {
		t   Trigger
		err string
	}{
		{Trigger{}, ""},
		{Trigger{Names: []string{"SET", "SCRIPT LOAD"}, Key: "lock:*", SHA: strings.Repeat("aB", 20), Nth: 3, At: AtReply, Reply: ReplyOK, HoldLimit: time.Minute}, ""},
		{Trigger{Names: []string{""}}, "name: "},
		{Trigger{Names: []string{"SET|GET"}}, "name: "},
		{Trigger{Key: "[a"}, "key: "},
		{Trigger{SHA: "abc"}, "sha: "},
		{Trigger{SHA: strings.Repeat("g", 40)}, "sha: "},
		{Trigger{Nth: -1}, "nth: -1 (allowed: 1 to"},
		{Trigger{Nth: MaxNth + 1}, "nth: "},
		{Trigger{At: 7}, "at: "},
		{Trigger{At: AtReply, Reply: 9}, "reply: "},
		{Trigger{Reply: ReplyOK}, "reply: ok needs at: reply"},
		{Trigger{HoldLimit: MaxHoldLimit + 1}, "hold limit: "},
		{Trigger{HoldLimit: -1}, "hold limit: "},
	}
	for _, tc := range cases {
		err := tc.t.Validate()
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.err)) {
			t.Errorf("Validate(%+v) = %v, want %q", tc.t, err, tc.err)
		}
		if tc.err != "" && err != nil && !strings.Contains(err.Error(), "allowed") {
			t.Errorf("%v: does not say what is allowed", err)
		}
		if _, aerr := NewRegistry().Arm(tc.t); (aerr == nil) != (err == nil) {
			t.Errorf("Arm and Validate disagree: %v, %v", aerr, err)
		}
	}
	for _, s := range []string{"", "request", "reply"} {
		if _, err := ParsePhase(s); err != nil {
			t.Error(err)
		}
	}
	for _, s := range []string{"", "any", "ok", "nil", "error"} {
		if _, err := ParseReplyFilter(s); err != nil {
			t.Error(err)
		}
	}
	if _, err := ParsePhase("Reply"); err == nil || !strings.Contains(err.Error(), "allowed: request, reply") {
		t.Errorf("ParsePhase(Reply): %v", err)
	}
	if _, err := ParseReplyFilter("okay"); err == nil || !strings.Contains(err.Error(), "allowed: any, ok, nil, error") {
		t.Errorf("ParseReplyFilter(okay): %v", err)
	}
	if got := ParseNames(" set|Eval |SCRIPT load"); !slices.Equal(got, []string{"SET", "EVAL", "SCRIPT LOAD"}) {
		t.Errorf("ParseNames: %q", got)
	}
}

func TestListenRefusesBadArguments(t *testing.T) {
	reg := NewRegistry()
	for _, tc := range []struct {
		reg                    *Registry
		client, node, upstream string
	}{
		{nil, "c", "n", "127.0.0.1:1"},
		{reg, "", "n", "127.0.0.1:1"},
		{reg, "c", "", "127.0.0.1:1"},
		{reg, "c", "n", "127.0.0.1"},
	} {
		if tap, err := Listen(tc.reg, tc.client, tc.node, tc.upstream); err == nil {
			tap.Close()
			t.Errorf("Listen(%v, %q, %q, %q) accepted", tc.reg, tc.client, tc.node, tc.upstream)
		}
	}
}

// An upstream that refuses: the client's connection is closed and a note
// says why.
func TestTapUpstreamRefuses(t *testing.T) {
	reg := NewRegistry()
	tap := newTap(t, reg, "c1", "n1", "127.0.0.1:"+freePort(t))
	c := dialRaw(t, tap.Addr())
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("the connection stayed open")
	}
	if err := waitFor(func() bool { return len(reg.Notes()) > 0 }); err != nil {
		t.Fatal("no note")
	}
	if n := reg.Notes()[0]; n.Kind != NoteRefused || !strings.Contains(n.Detail, "upstream") {
		t.Errorf("note %+v", n)
	}
}
