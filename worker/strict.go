package worker

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/lockfault/lockfault/lockimpl"
)

// The strict rules of the protocol (docs/PROTOCOL.md "Rules"), shared by the
// worker, which decodes commands, and the harness, which decodes messages.

// MaxLine is the longest line either side accepts, newline excluded.
const MaxLine = 1 << 20

// Bounds on every number of a command.
const (
	MaxOp             = 1<<53 - 1       // exact in every JSON implementation (IEEE doubles)
	MaxTTLMs          = 3_600_000       // ttl_ms: 1 ms .. 1 h
	MaxWaitMs         = 3_600_000       // wait_ms: 0 .. 1 h
	MaxHoldMs         = 3_600_000       // hold_ms: 0 .. 1 h
	MaxFailpointMs    = 3_600_000       // failpoint ms: 0 .. 1 h
	MaxFailpointCount = 1_000_000       // failpoint count: 1 .. 10^6 (absent or 0: 1)
	MaxOffsetMs       = 366 * 86400_000 // clock offset_ms: within ±366 days
	MaxFailpointNames = 1000            // ready: at most this many failpoint names
	MaxOptionNames    = 100             // ready: at most this many option names
	MaxVersionLen     = 200             // ready: the version string's length
	maxString         = 4096            // any string field
)

// Commands lists every command and the keys it may carry besides "cmd".
// A key outside its command's list is an error, so a typo never passes
// silently.
var Commands = map[string][]string{
	"init":      {"client", "lock", "options", "endpoints", "resource"},
	"acquire":   {"op", "key", "lease", "ttl_ms", "wait_ms"},
	"cs":        {"op", "lease", "hold_ms", "write_if_valid_ms"},
	"release":   {"op", "lease"},
	"extend":    {"op", "lease", "ttl_ms"},
	"round":     {"op", "op_cs", "op_release", "key", "lease", "ttl_ms", "wait_ms", "hold_ms"},
	"cut":       {},
	"failpoint": {"name", "action", "count", "ms"},
	"clock":     {"offset_ms"},
	"endpoints": {"endpoints"},
	"shutdown":  {},
}

// commandNames lists the commands for error messages, in the protocol's order.
const commandNames = "init, acquire, cs, release, extend, round, failpoint, clock, cut, endpoints, shutdown"

// isOperation reports whether a command is an operation (carries an op id
// and gets one reply).
func isOperation(cmd string) bool {
	switch cmd {
	case "acquire", "cs", "release", "extend", "round":
		return true
	}
	return false
}

// MessageTypes lists the message types a worker may send.
var MessageTypes = []string{"ready", "reply", "renew", "stopping", TypeFired, TypeInvoke, TypeClock, "error"}

// LineError is a line that breaks the protocol. Code is CodeMalformed or
// CodeNotSupported.
type LineError struct {
	Code string
	Msg  string
}

func (e *LineError) Error() string { return e.Msg }

func malformed(format string, a ...any) *LineError {
	return &LineError{Code: CodeMalformed, Msg: fmt.Sprintf(format, a...)}
}

func notSupported(format string, a ...any) *LineError {
	return &LineError{Code: CodeNotSupported, Msg: fmt.Sprintf(format, a...)}
}

// jsonKeys returns the json names of a struct type's fields.
func jsonKeys(t reflect.Type) map[string]bool {
	out := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out[name] = true
		}
	}
	return out
}

var (
	messageKeys   = jsonKeys(reflect.TypeOf(Message{}))
	endpointsKeys = jsonKeys(reflect.TypeOf(lockimpl.Endpoints{}))
)

func sortedKeys(m map[string]bool) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}

// object reads one JSON object from b and returns its members in order. It
// rejects anything else at the top, duplicate keys, null values and any data
// after the object.
func object(b []byte) (keys []string, vals map[string]json.RawMessage, err error) {
	if !utf8.Valid(b) {
		return nil, nil, fmt.Errorf("not UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, fmt.Errorf("not JSON: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, nil, fmt.Errorf("not a JSON object")
	}
	vals = map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, fmt.Errorf("not JSON: %v", err)
		}
		k := tok.(string) // object keys are always strings
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, fmt.Errorf("field %s: %v", k, err)
		}
		if _, dup := vals[k]; dup {
			return nil, nil, fmt.Errorf("field %s: given twice", k)
		}
		if string(v) == "null" {
			return nil, nil, fmt.Errorf("field %s: null is not allowed (leave the key out)", k)
		}
		keys = append(keys, k)
		vals[k] = v
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, nil, fmt.Errorf("not JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, fmt.Errorf("data after the JSON object (one object per line)")
	}
	return keys, vals, nil
}

// checkKeys rejects keys outside allowed (exact, case-sensitive match).
func checkKeys(prefix string, keys []string, allowed map[string]bool) error {
	for _, k := range keys {
		if !allowed[k] {
			return fmt.Errorf("field %s%s: unknown key (allowed: %s)", prefix, k, sortedKeys(allowed))
		}
	}
	return nil
}

// strictUnmarshal decodes b into v after the key checks; type errors name
// the field.
func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("field %s: %s is not allowed here (want %s)", te.Field, te.Value, te.Type)
		}
		return err
	}
	return nil
}

// DecodeCommand decodes and validates one command line: one JSON object,
// exact keys of that command, no trailing data, every number in bounds. It
// does not check the order of commands (init first, op ids unique): the
// worker does.
func DecodeCommand(line []byte) (Command, *LineError) {
	var c Command
	keys, vals, err := object(line)
	if err != nil {
		return c, malformed("%v", err)
	}
	raw, ok := vals["cmd"]
	if !ok {
		return c, malformed("field cmd: missing (allowed: %s)", commandNames)
	}
	var cmd string
	if err := json.Unmarshal(raw, &cmd); err != nil {
		return c, malformed("field cmd: not a string")
	}
	allowed, ok := Commands[cmd]
	if !ok {
		return c, notSupported("field cmd: unknown command %.100q (allowed: %s)", cmd, commandNames)
	}
	set := map[string]bool{"cmd": true}
	for _, k := range allowed {
		set[k] = true
	}
	if err := checkKeys("", keys, set); err != nil {
		return c, malformed("%s: %v", cmd, err)
	}
	if ep, ok := vals["endpoints"]; ok {
		ekeys, _, err := object(ep)
		if err != nil {
			return c, malformed("field endpoints: %v", err)
		}
		if err := checkKeys("endpoints.", ekeys, endpointsKeys); err != nil {
			return c, malformed("%v", err)
		}
	}
	if op, ok := vals["options"]; ok {
		if _, _, err := object(op); err != nil {
			return c, malformed("field options: %v", err)
		}
	}
	if err := strictUnmarshal(line, &c); err != nil {
		return c, malformed("%v", err)
	}
	return c, validate(c, vals)
}

// validate checks required fields and bounds.
func validate(c Command, vals map[string]json.RawMessage) *LineError {
	has := func(k string) bool { _, ok := vals[k]; return ok }
	if isOperation(c.Cmd) {
		if !has("op") || c.Op < 1 || c.Op > MaxOp {
			return malformed("field op: %s needs an op id from 1 to %d", c.Cmd, int64(MaxOp))
		}
	}
	for k, v := range map[string]string{"client": c.Client, "lock": c.Lock, "resource": c.Resource, "key": c.Key, "lease": c.Lease, "name": c.Name} {
		if len(v) > maxString {
			return malformed("field %s: longer than %d bytes", k, maxString)
		}
		if has(k) && v == "" {
			return malformed("field %s: empty (leave the key out)", k)
		}
	}
	switch c.Cmd {
	case "init":
		if c.Client == "" {
			return malformed("field client: init needs the client name")
		}
	case "acquire":
		if c.Key == "" {
			return malformed("field key: acquire needs the key the lock guards")
		}
		if e := inRange("ttl_ms", c.TTLMs, 1, MaxTTLMs); e != nil {
			return e
		}
		return inRange("wait_ms", c.WaitMs, 0, MaxWaitMs)
	case "cs", "release", "extend":
		if c.Lease == "" {
			return malformed("field lease: %s needs the lease", c.Cmd)
		}
		if c.Cmd == "cs" {
			if e := inRange("write_if_valid_ms", c.WriteIfValidMs, 0, MaxHoldMs); e != nil {
				return e
			}
			return inRange("hold_ms", c.HoldMs, 0, MaxHoldMs)
		}
		if c.Cmd == "extend" {
			return inRange("ttl_ms", c.TTLMs, 1, MaxTTLMs)
		}
	case "failpoint":
		return validateFailpoint(c)
	case "clock":
		return inRange("offset_ms", c.OffsetMs, -MaxOffsetMs, MaxOffsetMs)
	case "round":
		return validateRound(c)
	case "endpoints":
		if !has("endpoints") {
			return malformed("field endpoints: missing")
		}
	}
	return nil
}

// inRange refuses a numeric field outside [lo, hi].
func inRange(field string, v, lo, hi int64) *LineError {
	if v < lo || v > hi {
		return malformed("field %s: %d is out of range (allowed: %d to %d)", field, v, lo, hi)
	}
	return nil
}

// validateFailpoint checks a failpoint command: a name, a known action,
// and its count and ms within their bounds.
func validateFailpoint(c Command) *LineError {
	if c.Name == "" {
		return malformed("field name: a failpoint needs a name")
	}
	switch c.Action {
	case "crash", "sleep", "stop", "off":
	default:
		return malformed("field action: %.100q is not allowed (allowed: crash, sleep, stop, off)", c.Action)
	}
	if e := inRange("count", int64(c.Count), 0, MaxFailpointCount); e != nil {
		return e
	}
	return inRange("ms", c.Ms, 0, MaxFailpointMs)
}

// validateRound checks a round command: three different op ids, the key
// and the lease, and its ttl, wait and hold within their bounds.
func validateRound(c Command) *LineError {
	for k, v := range map[string]int64{"op_cs": c.OpCS, "op_release": c.OpRelease} {
		if v < 1 || v > MaxOp || v == c.Op {
			return malformed("field %s: round needs a third op id from 1 to %d, other than op", k, int64(MaxOp))
		}
	}
	if c.OpCS == c.OpRelease {
		return malformed("field op_release: round needs op, op_cs and op_release all different")
	}
	if c.Key == "" || c.Lease == "" {
		return malformed("field key: round needs the key and the lease")
	}
	if e := inRange("ttl_ms", c.TTLMs, 1, MaxTTLMs); e != nil {
		return e
	}
	if e := inRange("wait_ms", c.WaitMs, 0, MaxWaitMs); e != nil {
		return e
	}
	return inRange("hold_ms", c.HoldMs, 0, MaxHoldMs)
}

// DecodeMessage decodes and validates one message line from a worker (the
// harness's side of the same rules): one JSON object, known keys only,
// a known type, no trailing data.
func DecodeMessage(line []byte) (Message, error) {
	var m Message
	keys, vals, err := object(line)
	if err != nil {
		return m, err
	}
	if err := checkKeys("", keys, messageKeys); err != nil {
		return m, err
	}
	if _, ok := vals["type"]; !ok {
		return m, fmt.Errorf("field type: missing (allowed: %s)", strings.Join(MessageTypes, ", "))
	}
	if err := strictUnmarshal(line, &m); err != nil {
		return m, err
	}
	known := false
	for _, t := range MessageTypes {
		known = known || t == m.Type
	}
	if !known {
		return m, fmt.Errorf("field type: unknown message type %.100q (allowed: %s)", m.Type, strings.Join(MessageTypes, ", "))
	}
	if m.Op < 0 || m.Op > MaxOp {
		return m, fmt.Errorf("field op: %d is out of range (allowed: 1 to %d)", m.Op, int64(MaxOp))
	}
	if m.Ms < 0 || m.Ms > MaxFailpointMs {
		return m, fmt.Errorf("field ms: %d is out of range (allowed: 0 to %d)", m.Ms, MaxFailpointMs)
	}
	if m.OffsetMs < -MaxOffsetMs || m.OffsetMs > MaxOffsetMs || m.WallMs < 0 {
		return m, fmt.Errorf("fields offset_ms and wall_ms: out of range")
	}
	if m.Type == TypeClock && m.WallMs == 0 {
		return m, fmt.Errorf("field wall_ms: a clock message needs the wall time the lock reads (Unix ms)")
	}
	if m.Line < 0 || m.Pid < 0 {
		return m, fmt.Errorf("fields line and pid: negative")
	}
	if m.Type == "reply" {
		if m.Op == 0 {
			return m, fmt.Errorf("field op: a reply needs the op id of its command")
		}
		switch m.Status {
		case StatusOK, StatusFail, StatusInfo:
		default:
			return m, fmt.Errorf("field status: %.100q is not allowed (allowed: ok, fail, info)", m.Status)
		}
	}
	switch m.Code {
	case "", CodeNotSupported, CodeMalformed:
	default:
		return m, fmt.Errorf("field code: %.100q is not allowed (allowed: %s, %s)", m.Code, CodeNotSupported, CodeMalformed)
	}
	return m, nil
}

// ValidateReady checks what a worker declared in ready: a lock name, what
// it needs, known capabilities, bounded failpoint names.
func ValidateReady(m Message) error {
	if m.Lock == "" {
		return fmt.Errorf("ready: field lock: missing (the worker must name its lock)")
	}
	switch m.Needs {
	case "single", "masters", "etcd", "cluster":
	default:
		return fmt.Errorf("ready: field needs: %q is not allowed (allowed: single, masters, etcd, cluster)", m.Needs)
	}
	for _, c := range m.Caps {
		ok := false
		for _, k := range lockimpl.AllCaps {
			ok = ok || k == c
		}
		if !ok {
			return fmt.Errorf("ready: field caps: unknown capability %.100q (allowed: %s)", c, strings.Join(lockimpl.AllCaps, ", "))
		}
	}
	if len(m.Failpoints) > MaxFailpointNames {
		return fmt.Errorf("ready: field failpoints: %d names (allowed: at most %d)", len(m.Failpoints), MaxFailpointNames)
	}
	for _, f := range m.Failpoints {
		if f == "" || len(f) > maxString {
			return fmt.Errorf("ready: field failpoints: empty or over-long name")
		}
	}
	if len(m.Options) > MaxOptionNames {
		return fmt.Errorf("ready: field options: %d names (allowed: at most %d)", len(m.Options), MaxOptionNames)
	}
	for _, o := range m.Options {
		if o == "" || len(o) > maxString {
			return fmt.Errorf("ready: field options: empty or over-long name")
		}
	}
	if len(m.Version) > MaxVersionLen {
		return fmt.Errorf("ready: field version: %d bytes (allowed: at most %d)", len(m.Version), MaxVersionLen)
	}
	return nil
}

// LineReader reads lines of at most MaxLine bytes. A longer line is
// consumed to its end and reported as ErrLineTooLong, so the reader stays
// in step with the stream.
type LineReader struct {
	r    *bufio.Reader
	Line int // number of the last line read, 1-based
}

// ErrLineTooLong is returned (wrapped, with the line number) for a line
// over MaxLine bytes.
var ErrLineTooLong = fmt.Errorf("line longer than %d bytes", MaxLine)

// NewLineReader reads lines from r.
func NewLineReader(r io.Reader) *LineReader {
	return &LineReader{r: bufio.NewReaderSize(r, 64<<10)}
}

// Next returns the next line without its newline. At the end of the input
// it returns io.EOF (a last line without a newline is returned first).
func (lr *LineReader) Next() ([]byte, error) {
	var buf []byte
	long := false
	for {
		chunk, err := lr.r.ReadSlice('\n')
		if !long {
			if len(buf)+len(chunk) > MaxLine+1 { // +1: the newline
				long, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && (len(buf) == 0 && !long || err != io.EOF) {
			return nil, err
		}
		lr.Line++
		if long {
			return nil, fmt.Errorf("line %d: %w", lr.Line, ErrLineTooLong)
		}
		buf = bytes.TrimSuffix(buf, []byte("\n"))
		return bytes.TrimSuffix(buf, []byte("\r")), nil
	}
}
