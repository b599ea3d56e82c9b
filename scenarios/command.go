package scenarios

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/lockfault/lockfault"
	"gopkg.in/yaml.v3"
)

// AwaitCommand is the await kind that fires on a command a client sends to
// a node (or on its reply): the step after it acts on the client whose
// command matched (target trigger) while the command is held.
const AwaitCommand = "command"

// TargetTrigger names, in the steps after an `await: command`, the client
// whose command fired it.
const TargetTrigger = "trigger"

// Phases of a command match (CommandMatch.At).
const (
	AtRequest = "request" // before the request is forwarded to the node
	AtReply   = "reply"   // after the node answered, before the client has the reply
	// AtAfterReply: once the client has the reply, before it sends
	// anything more (its next commands are held until the step after the
	// await has ended).
	AtAfterReply = "after-reply"
)

// Reply kinds a match at the reply phase may ask for (CommandMatch.Reply).
const (
	ReplyOK    = "ok"    // neither an error, nor nil, nor the integer 0
	ReplyNil   = "nil"   // a nil reply
	ReplyError = "error" // an error reply (NOSCRIPT never matches)
	ReplyAny   = "any"
)

// Harness operations a client may have in flight (CommandMatch.Op).
const (
	OpAcquire = "acquire"
	OpRelease = "release"
	OpExtend  = "extend"
	OpCS      = "cs"
)

// Bounds of a command match.
const (
	MaxNth       = 1000 // the nth match since the step began
	maxMatchText = 1000 // characters of name, key, script
)

var (
	commandOps     = []string{OpAcquire, OpRelease, OpExtend, OpCS}
	commandPhases  = []string{AtRequest, AtReply, AtAfterReply}
	commandReplies = []string{ReplyOK, ReplyNil, ReplyError, ReplyAny}
	commandNameRE  = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]*$`)
	shaRE          = regexp.MustCompile(`^[0-9a-fA-F]{40}$`)
)

// CommandMatch says which command (or reply) an `await: command` step waits
// for; every field given must match.
type CommandMatch struct {
	// Name: command names, case-insensitive, "|"-separated (EVAL, SET|SETNX).
	Name string `yaml:"name"`
	// Key: a glob (path.Match) on any key the command names.
	Key string `yaml:"key"`
	// Script: a substring of the script text (EVAL, or an EVALSHA whose
	// text the tap saw loaded or evaluated).
	Script string `yaml:"script"`
	// SHA: the script's sha1 (EVALSHA's argument, or EVAL's text hashed).
	SHA string `yaml:"sha"`
	// Op: the harness operation the client has in flight (acquire,
	// release, extend, cs).
	Op string `yaml:"op"`
	// Node: only a command sent to this Redis node (n1, n2, ...): of the
	// commands a lock sends to every master at once, the one to a given
	// master.
	Node string `yaml:"node"`
	// Write: only a command that may change data (SET, DEL, EXPIRE, EVAL,
	// a MULTI/EXEC that writes, ...): "the first write of an acquire".
	Write bool `yaml:"write"`
	// Nth: fire on the nth match since the step began (default 1).
	Nth int `yaml:"nth"`
	// At: request (default) or reply.
	At string `yaml:"at"`
	// Reply: with at: reply only, the kind of reply that matches: ok, nil,
	// error or any (default).
	Reply string `yaml:"reply"`
}

// Names lists the command names the match accepts, upper-cased.
func (m CommandMatch) Names() []string {
	if m.Name == "" {
		return nil
	}
	return strings.Split(strings.ToUpper(m.Name), "|")
}

// String renders the match as "name=SET|SETNX key=order* op=release at=reply".
func (m CommandMatch) String() string {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	add("name", m.Name)
	add("key", m.Key)
	if m.Script != "" {
		parts = append(parts, fmt.Sprintf("script=%q", m.Script))
	}
	add("sha", m.SHA)
	add("op", m.Op)
	add("node", m.Node)
	if m.Write {
		parts = append(parts, "write")
	}
	if m.Nth > 1 {
		parts = append(parts, fmt.Sprintf("nth=%d", m.Nth))
	}
	if m.At != AtRequest && m.At != "" {
		add("at", m.At)
		if m.Reply != ReplyAny {
			add("reply", m.Reply)
		}
	}
	return strings.Join(parts, " ")
}

// MarshalYAML writes only the fields the match sets (defaults left out).
func (m CommandMatch) MarshalYAML() (any, error) {
	n := yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
	add := func(k string, v any) {
		var vn yaml.Node
		vn.Encode(v)
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, &vn)
	}
	for _, f := range []struct{ k, v string }{{"name", m.Name}, {"key", m.Key}, {"script", m.Script}, {"sha", m.SHA}, {"op", m.Op}, {"node", m.Node}} {
		if f.v != "" {
			add(f.k, f.v)
		}
	}
	if m.Write {
		add("write", true)
	}
	if m.Nth > 1 {
		add("nth", m.Nth)
	}
	if m.At != AtRequest && m.At != "" {
		add("at", m.At)
		if m.Reply != "" && m.Reply != ReplyAny {
			add("reply", m.Reply)
		}
	}
	return &n, nil
}

// validateCommand checks what a step says about commands: `command` goes
// with `await: command` only, which needs it; the match itself; and the
// client target trigger, which needs an earlier `await: command` in the
// cycle. It fills the match's defaults.
func (s *Scenario) validateCommand(i int) error {
	st := &s.Nemesis.Steps[i]
	p := fmt.Sprintf("nemesis.steps.%d", i)
	if st.Command != nil && st.Await != AwaitCommand {
		return s.ErrAt(p+".command", "command goes with `await: command` only")
	}
	if st.Await == AwaitCommand {
		if st.Command == nil {
			return s.ErrAt(p+".await", "missing the command to wait for (allowed: command: {name, key, script, sha, op, node, write, nth, at, reply})")
		}
		if err := s.validateMatch(p+".command", st.Command); err != nil {
			return err
		}
	}
	for _, t := range []struct{ field, value string }{{"target", st.Target}, {"params.clients", st.Params["clients"]}, {"by", st.By}} {
		if t.value != TargetTrigger {
			continue
		}
		if t.field == "by" {
			return s.ErrAt(p+".by", "trigger is a fault target, not an await's client (allowed: c1..c%d)", s.Workload.Clients)
		}
		if !slices.ContainsFunc(s.Nemesis.Steps[:i], func(x Step) bool { return x.Await == AwaitCommand }) {
			return s.ErrAt(p+"."+t.field, "trigger names the client whose command fired an `await: command`, and no earlier step of this cycle is one (allowed: c1..c%d, holder, others, all)", s.Workload.Clients)
		}
	}
	return nil
}

// validateMatch checks one command match and fills its defaults.
func (s *Scenario) validateMatch(p string, m *CommandMatch) error {
	if m.Name == "" && m.Key == "" && m.Script == "" && m.SHA == "" && m.Op == "" && !m.Write {
		return s.ErrAt(p, "matches every command: name at least one of name, key, script, sha, op, write")
	}
	for _, f := range []struct{ name, v string }{{"name", m.Name}, {"key", m.Key}, {"script", m.Script}} {
		if len(f.v) > maxMatchText {
			return s.ErrAt(p+"."+f.name, "%d characters (allowed: 1 to %d)", len(f.v), maxMatchText)
		}
	}
	if m.Name != "" {
		for _, n := range strings.Split(m.Name, "|") {
			if !commandNameRE.MatchString(n) {
				return s.ErrAt(p+".name", "%q is not a command name (allowed: names such as SET, EVALSHA, separated by |)", n)
			}
		}
	}
	if m.Key != "" {
		if _, err := path.Match(m.Key, ""); err != nil {
			return s.ErrAt(p+".key", "%q is not a glob (allowed: path.Match syntax, e.g. order* or lock:order-?)", m.Key)
		}
	}
	if m.SHA != "" && !shaRE.MatchString(m.SHA) {
		return s.ErrAt(p+".sha", "%q is not a sha1 (allowed: 40 hexadecimal digits)", m.SHA)
	}
	if m.Op != "" && !slices.Contains(commandOps, m.Op) {
		return s.ErrAt(p+".op", "%q is not allowed (allowed: %s)", m.Op, strings.Join(commandOps, ", "))
	}
	if m.Node != "" {
		if n := s.Topology.redisNodes(); !slices.Contains(redisNodeNames(n), m.Node) {
			return s.ErrAt(p+".node", "%q is not a Redis node of this topology (allowed: %s)", m.Node, strings.Join(redisNodeNames(n), ", "))
		}
	}
	if m.Nth < 0 || m.Nth > MaxNth {
		return s.ErrAt(p+".nth", "want 1 to %d, got %d", MaxNth, m.Nth)
	}
	if m.Nth == 0 {
		m.Nth = 1
	}
	switch m.At {
	case "":
		m.At = AtRequest
	case AtRequest, AtReply, AtAfterReply:
	default:
		return s.ErrAt(p+".at", "%q is not allowed (allowed: %s)", m.At, strings.Join(commandPhases, ", "))
	}
	if m.Reply != "" && m.At == AtRequest {
		return s.ErrAt(p+".reply", "reply goes with at: reply or after-reply only (the request has no reply yet)")
	}
	if m.Reply != "" && !slices.Contains(commandReplies, m.Reply) {
		return s.ErrAt(p+".reply", "%q is not allowed (allowed: %s)", m.Reply, strings.Join(commandReplies, ", "))
	}
	if m.At != AtRequest && m.Reply == "" {
		m.Reply = ReplyAny
	}
	return nil
}

// redisNodes is how many Redis nodes (n1, n2, ...) the topology runs:
// Sentinels and etcd members speak no RESP a tap could match.
func (t Topology) redisNodes() int {
	switch t.Kind {
	case lockfault.Etcd:
		return 0
	case lockfault.Masters:
		return t.Masters
	case lockfault.Cluster:
		return t.Masters * (1 + t.Replicas)
	case lockfault.Replicated:
		return 1 + t.Replicas
	}
	return 1
}

// redisNodeNames are n1 to nN.
func redisNodeNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("n%d", i+1)
	}
	return out
}
