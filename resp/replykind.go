package resp

import (
	"fmt"
	"strings"
)

// Kind is the type of a reply.
type Kind uint8

const (
	KindSimple    Kind = iota + 1 // +OK
	KindQueued                    // +QUEUED: a command queued inside MULTI
	KindError                     // -ERR …, or a RESP3 blob error !…
	KindInt                       // :1
	KindBulk                      // $5 hello
	KindNull                      // $-1, *-1, RESP3 _
	KindArray                     // *n
	KindMap                       // %n
	KindSet                       // ~n
	KindDouble                    // ,1.5
	KindBool                      // #t, #f
	KindBigNumber                 // (123…
	KindVerbatim                  // =15 txt:…
	KindPush                      // >n: not a reply, out-of-band data
)

var kindNames = [...]string{
	KindSimple: "simple", KindQueued: "queued", KindError: "error", KindInt: "integer",
	KindBulk: "bulk", KindNull: "nil", KindArray: "array", KindMap: "map", KindSet: "set",
	KindDouble: "double", KindBool: "boolean", KindBigNumber: "bignumber",
	KindVerbatim: "verbatim", KindPush: "push",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// kindOf is the kind a RESP type byte introduces.
func kindOf(t byte) Kind {
	switch t {
	case '+':
		return KindSimple
	case '-', '!':
		return KindError
	case ':':
		return KindInt
	case '$':
		return KindBulk
	case '_':
		return KindNull
	case '*':
		return KindArray
	case '%':
		return KindMap
	case '~':
		return KindSet
	case ',':
		return KindDouble
	case '#':
		return KindBool
	case '(':
		return KindBigNumber
	case '=':
		return KindVerbatim
	case '>':
		return KindPush
	}
	return 0
}

// Reply summarises one reply (or push) as the tap saw it; aggregates are
// summarised by their length, not their elements.
type Reply struct {
	Kind Kind
	// Code is an error's first word: "ERR", "NOSCRIPT", "WRONGTYPE".
	Code string
	// Text is the start (MaxReplyText bytes) of a simple string, an
	// error's message, a bulk or verbatim string (without its format), a
	// double or a big number.
	Text string
	// Int is an integer's value; a boolean's is 1 or 0.
	Int int64
	// Len is the length in bytes of a bulk, verbatim or blob error, or the
	// elements of an aggregate (pairs of a map).
	Len int64
	// Size is the reply's length on the wire, attributes included.
	Size int64
}

// OK reports whether the reply says the command took effect: not an
// error, not nil, not the integer 0 or boolean false, and not QUEUED (a
// command inside MULTI takes effect at EXEC).
func (r *Reply) OK() bool {
	switch r.Kind {
	case KindError, KindNull, KindQueued:
		return false
	case KindInt, KindBool:
		return r.Int != 0
	}
	return true
}

// NoScript reports whether the reply is the NOSCRIPT error by which Redis
// asks for a script's text (the client then retries with EVAL).
func (r *Reply) NoScript() bool { return r.Kind == KindError && r.Code == "NOSCRIPT" }

// String is a short description: "integer 1", "error NOSCRIPT", "bulk 5".
func (r *Reply) String() string {
	switch r.Kind {
	case KindError:
		return "error " + r.Code
	case KindInt, KindBool:
		return fmt.Sprintf("%s %d", r.Kind, r.Int)
	case KindSimple, KindDouble, KindBigNumber:
		return fmt.Sprintf("%s %s", r.Kind, r.Text)
	case KindBulk, KindVerbatim, KindArray, KindMap, KindSet, KindPush:
		return fmt.Sprintf("%s %d", r.Kind, r.Len)
	}
	return r.Kind.String()
}

// finish fills the fields derived from the kept text.
func (r *Reply) finish(text []byte) {
	switch r.Kind {
	case KindVerbatim:
		if len(text) >= 4 && text[3] == ':' {
			text = text[4:]
		}
	case KindSimple:
		if string(text) == "QUEUED" {
			r.Kind = KindQueued
		}
	}
	r.Text = string(text)
	if r.Kind == KindError {
		r.Code, _, _ = strings.Cut(r.Text, " ")
	}
}
