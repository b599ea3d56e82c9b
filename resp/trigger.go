package resp

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"
)

// Phase is where a trigger fires.
type Phase uint8

const (
	// AtRequest fires on a command before it is forwarded to the node.
	AtRequest Phase = iota
	// AtReply fires on a reply once the node sent it whole, before the
	// client gets it.
	AtReply
)

func (p Phase) String() string {
	if p == AtReply {
		return "reply"
	}
	return "request"
}

// ParsePhase reads "request" or "reply" ("" is request).
func ParsePhase(s string) (Phase, error) {
	switch s {
	case "", "request":
		return AtRequest, nil
	case "reply":
		return AtReply, nil
	}
	return 0, fmt.Errorf("at: %q (allowed: request, reply)", s)
}

// ReplyFilter says which replies an AtReply trigger accepts.
type ReplyFilter uint8

const (
	ReplyAny   ReplyFilter = iota // every reply
	ReplyOK                       // Reply.OK: not an error, nil, 0, false or QUEUED
	ReplyNil                      // nil or null
	ReplyError                    // an error
)

var replyFilterNames = [...]string{ReplyAny: "any", ReplyOK: "ok", ReplyNil: "nil", ReplyError: "error"}

func (f ReplyFilter) String() string {
	if int(f) < len(replyFilterNames) {
		return replyFilterNames[f]
	}
	return fmt.Sprintf("reply-filter(%d)", uint8(f))
}

// ParseReplyFilter reads "ok", "nil", "error" or "any" ("" is any).
func ParseReplyFilter(s string) (ReplyFilter, error) {
	if s == "" {
		return ReplyAny, nil
	}
	if i := slices.Index(replyFilterNames[:], s); i >= 0 {
		return ReplyFilter(i), nil
	}
	return 0, fmt.Errorf("reply: %q (allowed: %s)", s, strings.Join(replyFilterNames[:], ", "))
}

// Accepts reports whether the filter lets r through.
func (f ReplyFilter) Accepts(r *Reply) bool {
	switch f {
	case ReplyOK:
		return r.OK()
	case ReplyNil:
		return r.Kind == KindNull
	case ReplyError:
		return r.Kind == KindError
	}
	return true
}

// ParseNames splits "SET|setnx" into upper-case names.
func ParseNames(s string) []string {
	var names []string
	for n := range strings.SplitSeq(s, "|") {
		names = append(names, strings.ToUpper(strings.TrimSpace(n)))
	}
	return names
}

// Trigger says which command to catch and what to do with it. Every field
// given must match; the zero value of a field matches anything.
type Trigger struct {
	// Client is the label of the tap's client ("" any).
	Client string
	// Names are command names, any case: a name or a name with its
	// sub-command ("SCRIPT LOAD"). Without names, the connection set-up
	// commands (Command.SetUp) never match.
	Names []string
	// Key is a glob (path.Match syntax: '*' does not cross '/') matched
	// against every key the command names.
	Key string
	// Script is a substring of the script's text (EVAL, or an EVALSHA whose
	// text the registry saw loaded or EVALed).
	Script string
	// SHA is the script's SHA1, 40 hex digits.
	SHA string
	// Op is the operation the client has in flight (Command.Op).
	Op string
	// Node is the label of the tap's node ("" any).
	Node string
	// Pred, if set, must also accept the command. It runs on the tap's
	// connection goroutine: it must be quick and must not call the registry.
	Pred func(client string, c *Command) bool
	// Nth fires the trigger on the nth match since it was armed, counted
	// over every tap of the registry (0 means 1).
	Nth int
	// At is where it fires.
	At Phase
	// Reply filters the replies an AtReply trigger fires on. A NOSCRIPT
	// error never matches (the client retries with EVAL).
	Reply ReplyFilter
	// HoldLimit bounds how long the message is held (0 means
	// DefaultHoldLimit).
	HoldLimit time.Duration
	// OnFire, if set, is called when the trigger fires, and the message
	// is held until it returns or HoldLimit passes (then ctx is done, and
	// the message goes on: Release.Expired). It must return once ctx is
	// done: Tap.Close waits for it. Without OnFire nothing is held.
	OnFire func(ctx context.Context, f Fire)
	// Every keeps the trigger armed after it fired: it fires on every
	// match from the nth on, until disarmed (a gate that holds each of a
	// client's commands).
	Every bool
	// Drop, if set, is asked once a held request's hold ended: true drops
	// it (it never reaches the node) and closes its connection, as when
	// the client died while its command was held.
	Drop func() bool
}

// Validate checks the trigger's fields; the error names the field, what is
// wrong and what is allowed.
func (t Trigger) Validate() error {
	for _, n := range t.Names {
		if strings.TrimSpace(n) == "" || strings.ContainsAny(n, "|\r\n") {
			return fmt.Errorf("name: %q (allowed: a command name such as SET or SCRIPT LOAD)", n)
		}
	}
	if _, err := path.Match(t.Key, ""); err != nil {
		return fmt.Errorf("key: %q is not a glob (allowed: path.Match syntax)", t.Key)
	}
	if t.SHA != "" && (len(t.SHA) != 40 || strings.Trim(strings.ToLower(t.SHA), "0123456789abcdef") != "") {
		return fmt.Errorf("sha: %q (allowed: 40 hex digits)", t.SHA)
	}
	if t.Nth < 0 || t.Nth > MaxNth {
		return fmt.Errorf("nth: %d (allowed: 1 to %d)", t.Nth, MaxNth)
	}
	if t.At != AtRequest && t.At != AtReply {
		return fmt.Errorf("at: %d (allowed: request, reply)", t.At)
	}
	if int(t.Reply) >= len(replyFilterNames) {
		return fmt.Errorf("reply: %d (allowed: any, ok, nil, error)", t.Reply)
	}
	if t.Reply != ReplyAny && t.At != AtReply {
		return fmt.Errorf("reply: %s needs at: reply (allowed with at: request: any)", t.Reply)
	}
	if t.HoldLimit < 0 || t.HoldLimit > MaxHoldLimit {
		return fmt.Errorf("hold limit: %v (allowed: 0 to %v)", t.HoldLimit, MaxHoldLimit)
	}
	return nil
}

// normal returns the trigger with its defaults filled in.
func (t Trigger) normal() Trigger {
	t.Names = slices.Clone(t.Names)
	for i, n := range t.Names {
		t.Names[i] = strings.ToUpper(strings.TrimSpace(n))
	}
	t.SHA = strings.ToLower(t.SHA)
	if t.Nth == 0 {
		t.Nth = 1
	}
	if t.HoldLimit == 0 {
		t.HoldLimit = DefaultHoldLimit
	}
	return t
}

// matches reports whether the trigger accepts a command (and, AtReply, its
// reply) seen at phase ph on the tap of the given client and node.
func (t *Trigger) matches(ph Phase, client, node string, c *Command, r *Reply) bool {
	switch {
	case ph != t.At:
		return false
	case t.Client != "" && t.Client != client:
		return false
	case t.Node != "" && t.Node != node:
		return false
	case len(t.Names) == 0 && c.SetUp():
		return false
	case len(t.Names) > 0 && !slices.ContainsFunc(t.Names, c.Is):
		return false
	case t.Key != "" && !slices.ContainsFunc(c.Keys, func(k string) bool {
		ok, _ := path.Match(t.Key, k)
		return ok
	}):
		return false
	case t.Script != "" && !strings.Contains(c.Script, t.Script):
		return false
	case t.SHA != "" && t.SHA != c.SHA:
		return false
	case t.Op != "" && t.Op != c.Op:
		return false
	case ph == AtReply && (r.NoScript() || !t.Reply.Accepts(r)):
		return false
	case t.Pred != nil && !t.Pred(client, c):
		return false
	}
	return true
}

// Fire is what a trigger fired on.
type Fire struct {
	Client, Node string
	// Conn numbers the connection within its tap (from 1).
	Conn  uint64
	Phase Phase
	// Command is the command (AtReply: the one the reply answers).
	Command *Command
	// Reply is the reply, AtReply only.
	Reply *Reply
	// Nth is the trigger's match count when it fired.
	Nth int
	// At is when the hold began (or the trigger fired, without OnFire).
	At time.Time
}

// Release is how a fired trigger's hold ended.
type Release struct {
	Fire
	// ReleasedAt is when the message was let go.
	ReleasedAt time.Time
	// Expired is set when OnFire had not returned within the hold limit:
	// the message was forwarded anyway.
	Expired bool
	// Closed is set when the tap closed during the hold.
	Closed bool
}
