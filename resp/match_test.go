package resp

import (
	"strings"
	"sync"
	"testing"
)

// Which command of a fixed sequence, sent by two clients through their own
// taps, each trigger fires on.
func TestTriggerMatching(t *testing.T) {
	node := startRedis(t)
	reg := NewRegistry()
	var mu sync.Mutex
	ops := map[string]string{}
	reg.SetOpSource(func(client string) string {
		mu.Lock()
		defer mu.Unlock()
		return ops[client]
	})
	conns := map[string]*rawConn{
		"c1": dialRaw(t, newTap(t, reg, "c1", "n1", node).Addr()),
		"c2": dialRaw(t, newTap(t, reg, "c2", "n1", node).Addr()),
	}
	script := "return redis.call('del', KEYS[1])"
	sha := sha1hex(script)
	seq := []struct {
		client string
		argv   []string
		op     string
	}{
		{"c1", []string{"PING"}, ""},                               // 0
		{"c1", []string{"SET", "order:1", "a"}, ""},                // 1
		{"c1", []string{"GET", "order:1"}, ""},                     // 2
		{"c1", []string{"GET", "missing"}, ""},                     // 3
		{"c2", []string{"SET", "order:2", "b"}, ""},                // 4
		{"c1", []string{"EVAL", script, "1", "lock:x", "tok"}, ""}, // 5
		{"c2", []string{"EVALSHA", sha, "1", "lock:y", "tok"}, ""}, // 6
		{"c1", []string{"EVALSHA", sha1hex("nope"), "0"}, ""},      // 7: NOSCRIPT
		{"c2", []string{"HSET", "h", "f", "v"}, ""},                // 8
		{"c1", []string{"SET", "lock:z", "1"}, "release"},          // 9
		{"c1", []string{"GET", "h"}, ""},                           // 10: WRONGTYPE
		{"c1", []string{"script", "load", "return 1"}, ""},         // 11
		{"c1", []string{"CLIENT", "SETNAME", "me"}, ""},            // 12
	}
	cases := []struct {
		name string
		t    Trigger
		want int // index in seq, -1 for none
	}{
		{"name", Trigger{Names: []string{"set"}}, 1},
		{"names by client", Trigger{Names: ParseNames("SET|HSET"), Client: "c2"}, 4},
		{"key glob nth", Trigger{Key: "order:*", Nth: 2}, 2},
		{"nameless skips set-up", Trigger{}, 1},
		{"set-up named", Trigger{Names: []string{"PING"}}, 0},
		{"sub-command by full name", Trigger{Names: []string{"SCRIPT LOAD"}}, 11},
		{"container name", Trigger{Names: []string{"client"}}, 12},
		{"script", Trigger{Script: "redis.call('del'"}, 5},
		{"script of an EVALSHA seen on another tap", Trigger{Script: "redis.call('del'", Nth: 2}, 6},
		{"sha", Trigger{SHA: strings.ToUpper(sha), Names: []string{"EVALSHA"}}, 6},
		{"op", Trigger{Op: "release"}, 9},
		{"predicate", Trigger{Pred: func(client string, c *Command) bool { return client == "c2" && c.Write }}, 4},
		{"reply nil", Trigger{At: AtReply, Reply: ReplyNil}, 3},
		{"reply ok", Trigger{At: AtReply, Reply: ReplyOK, Names: []string{"GET"}}, 2},
		{"reply error skips NOSCRIPT", Trigger{At: AtReply, Reply: ReplyError}, 10},
		{"NOSCRIPT never matches", Trigger{At: AtReply, Names: []string{"EVALSHA"}, Nth: 2}, -1},
		{"no such key", Trigger{Key: "nothing*"}, -1},
	}
	armed := make([]*Armed, len(cases))
	for i, tc := range cases {
		armed[i] = arm(t, reg, tc.t)
	}
	for _, s := range seq {
		mu.Lock()
		ops[s.client] = s.op
		mu.Unlock()
		c := conns[s.client]
		c.Write([]byte(resp(s.argv...)))
		c.readReplies(t, 1)
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want < 0 {
				notFired(t, armed[i])
				return
			}
			rel := released(t, armed[i])
			if got, want := strings.Join(rel.Command.Argv, " "), strings.Join(seq[tc.want].argv, " "); got != want {
				t.Errorf("fired on %q, want %q (command %d)", got, want, tc.want)
			}
		})
	}

	// What the taps saw, as shapes; a shape's trigger matches a sibling.
	seen := reg.Seen()
	want := Shape{Client: "c1", Name: "SET", Key: "lock:z", Op: "release"}
	found := false
	for _, s := range seen {
		found = found || s == want
		if s.Name == "PING" || s.Name == "CLIENT SETNAME" {
			t.Errorf("set-up command recorded as a shape: %+v", s)
		}
	}
	if !found {
		t.Errorf("shape %+v not in %+v", want, seen)
	}
	sib := Shape{Client: "c1", Name: "SET", Key: KeyPattern("order:1")}.Trigger()
	c := describe([]string{"SET", "order:77", "x"}, 3, "", false, false)
	if !sib.matches(AtRequest, "c1", "n1", c, nil) {
		t.Errorf("shape trigger %+v does not match %s", sib, c)
	}
	// A trigger that names a node matches that node's taps only.
	onN2 := Trigger{Names: []string{"SET"}, Node: "n2"}
	if onN2.matches(AtRequest, "c1", "n1", c, nil) || !onN2.matches(AtRequest, "c1", "n2", c, nil) {
		t.Errorf("trigger on n2: matches on n1 %v (want false), on n2 %v (want true)",
			onN2.matches(AtRequest, "c1", "n1", c, nil), onN2.matches(AtRequest, "c1", "n2", c, nil))
	}
	if text, ok := reg.Script(sha); !ok || text != script {
		t.Errorf("script of %s: %q, %v", sha, text, ok)
	}
}
