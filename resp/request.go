package resp

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strings"
)

// RequestParser finds the commands in a client's byte stream, RESP2 or
// RESP3 alike: arrays of bulk strings, and inline commands (a line of
// words, as redis-cli and telnet send). It parses as the server does, so it
// ends each command exactly where the server would execute it.
//
// Bytes may arrive in any pieces. Only header lines, inline lines and the
// kept part of each argument are copied; a long value is counted and
// skipped. The zero value is ready to use. After an error the parser is
// spent: every later Feed returns the same error.
type RequestParser struct {
	state reqState
	line  lineReader
	size  int64 // bytes of the current command so far

	argc int // arguments of the current command
	left int // arguments still to read
	bulk int64
	crlf int // bytes of the current argument's "\r\n" still to read

	argv   []string // the kept arguments
	arg    []byte   // the kept part of the current argument
	argLen int      // bytes of the current argument so far
	keep   int      // bytes of the current argument to keep
	trunc  bool     // some argument or argument list was cut
	sum    hash.Hash
	sha    string // of the script argument, if any
	err    error
}

type reqState uint8

const (
	reqStart reqState = iota
	reqCount
	reqBulkHeader
	reqBulkBody
	reqBulkEnd
	reqInline
)

// Feed consumes bytes of b up to the end of the next command. It returns
// how many bytes it consumed and the command if one ended there; a nil
// command means b ran out in the middle of one (Feed again with what
// follows). Empty commands ("*0\r\n", a blank line), which Redis skips
// without a reply, are skipped too.
func (p *RequestParser) Feed(b []byte) (int, *Command, error) {
	if p.err != nil {
		return 0, nil, p.err
	}
	n := 0
	for n < len(b) {
		k, cmd, err := p.step(b[n:])
		n += k
		p.size += int64(k)
		if err != nil {
			p.err = fmt.Errorf("request byte %d: %w", p.size, err)
			return n, nil, p.err
		}
		if cmd != nil {
			cmd.Size, p.size = p.size, 0
			return n, cmd, nil
		}
	}
	return n, nil, nil
}

// step advances by one state and returns the bytes it consumed.
func (p *RequestParser) step(b []byte) (int, *Command, error) {
	switch p.state {
	case reqStart:
		p.argv, p.argc, p.trunc, p.sha, p.size = p.argv[:0], 0, false, "", 0
		if b[0] == '*' {
			p.state = reqCount
			p.line.reset(MaxHeaderLen, MaxHeaderLen)
		} else {
			p.state = reqInline
			p.line.reset(MaxInlineLen, MaxInlineLen)
		}
		return 0, nil, nil
	case reqCount:
		return p.count(b)
	case reqBulkHeader:
		return p.bulkHeader(b)
	case reqBulkBody:
		m := int(min(int64(len(b)), p.bulk))
		p.takeArg(b[:m])
		if p.bulk -= int64(m); p.bulk == 0 {
			p.crlf, p.state = 2, reqBulkEnd
		}
		return m, nil, nil
	case reqBulkEnd:
		return p.bulkEnd(b)
	case reqInline:
		return p.inline(b)
	}
	return 0, nil, errors.New("request parser in an unknown state")
}

// count reads the argument count line (*N).
func (p *RequestParser) count(b []byte) (int, *Command, error) {
	k, line, err := p.header(b)
	if err != nil || line == nil {
		return k, nil, err
	}
	count, err := parseInt(line[1:])
	switch {
	case err != nil:
		return k, nil, fmt.Errorf("argument count: %w", err)
	case count <= 0:
		p.state = reqStart // an empty command: no reply
	case count > MaxArgs:
		return k, nil, fmt.Errorf("argument count %d over %d", count, MaxArgs)
	default:
		p.argc, p.left, p.state = int(count), int(count), reqBulkHeader
		p.line.reset(MaxHeaderLen, MaxHeaderLen)
	}
	return k, nil, nil
}

// bulkHeader reads an argument's length line ($N).
func (p *RequestParser) bulkHeader(b []byte) (int, *Command, error) {
	k, line, err := p.header(b)
	if err != nil || line == nil {
		return k, nil, err
	}
	if line[0] != '$' {
		return k, nil, fmt.Errorf("argument %d: expected '$', got %q", p.argc-p.left, line[0])
	}
	size, err := parseInt(line[1:])
	switch {
	case err != nil:
		return k, nil, fmt.Errorf("argument %d length: %w", p.argc-p.left, err)
	case size < 0 || size > MaxBulkLen:
		return k, nil, fmt.Errorf("argument %d length %d (allowed: 0 to %d)", p.argc-p.left, size, MaxBulkLen)
	}
	p.startArg(p.argc - p.left)
	p.bulk, p.state = size, reqBulkBody
	if size == 0 {
		p.crlf, p.state = 2, reqBulkEnd
	}
	return k, nil, nil
}

// bulkEnd reads the CRLF that ends an argument, and returns the command after its last.
func (p *RequestParser) bulkEnd(b []byte) (int, *Command, error) {
	if want := "\r\n"[2-p.crlf]; b[0] != want {
		return 0, nil, fmt.Errorf("argument %d not ended by \"\\r\\n\"", p.argc-p.left)
	}
	if p.crlf--; p.crlf > 0 {
		return 1, nil, nil
	}
	p.endArg(p.argc - p.left)
	if p.left--; p.left > 0 {
		p.state = reqBulkHeader
		p.line.reset(MaxHeaderLen, MaxHeaderLen)
		return 1, nil, nil
	}
	p.state = reqStart
	return 1, p.command(false), nil
}

// inline reads an inline command (words on one line).
func (p *RequestParser) inline(b []byte) (int, *Command, error) {
	k, ended, err := p.line.read(b)
	if err != nil || !ended {
		return k, nil, err
	}
	line, _, err := p.line.text(true)
	if err != nil {
		return k, nil, err
	}
	words, err := splitInline(line)
	if err != nil {
		return k, nil, err
	}
	p.state = reqStart
	if len(words) == 0 {
		return k, nil, nil // a blank line: no reply
	}
	p.argc = len(words)
	for i, w := range words {
		p.startArg(i)
		p.takeArg(w)
		p.endArg(i)
	}
	return k, p.command(true), nil
}

// header reads a length or count line and returns it once whole (nil
// before).
func (p *RequestParser) header(b []byte) (int, []byte, error) {
	k, ended, err := p.line.read(b)
	if err != nil || !ended {
		return k, nil, err
	}
	line, _, err := p.line.text(false)
	if err == nil && len(line) == 0 {
		err = errors.New("empty header line")
	}
	return k, line, err
}

// startArg decides how much of argument i to keep, and whether to hash it
// (the script of EVAL, EVAL_RO and SCRIPT LOAD).
func (p *RequestParser) startArg(i int) {
	p.arg, p.argLen, p.sum = p.arg[:0], 0, nil
	switch {
	case isScriptArg(p.argv, i):
		p.keep = MaxScriptKept
		p.sum = sha1.New()
	case i < MaxArgsKept:
		p.keep = MaxArgKept
	default:
		p.keep = 0
		p.trunc = true
	}
}

// takeArg takes a piece of the current argument.
func (p *RequestParser) takeArg(b []byte) {
	if room := p.keep - len(p.arg); room > 0 {
		p.arg = append(p.arg, b[:min(room, len(b))]...)
	}
	p.argLen += len(b)
	if p.sum != nil {
		p.sum.Write(b)
	}
}

// endArg records argument i once read whole.
func (p *RequestParser) endArg(i int) {
	if p.argLen > len(p.arg) {
		p.trunc = true
	}
	if i >= MaxArgsKept {
		return
	}
	if p.sum != nil {
		p.sha = hex.EncodeToString(p.sum.Sum(nil))
		p.sum = nil
	}
	p.argv = append(p.argv, string(p.arg))
}

// command describes the command just read.
func (p *RequestParser) command(inline bool) *Command {
	return describe(p.argv, p.argc, p.sha, p.trunc, inline)
}

// isScriptArg reports whether argument i is a script's text, given the
// arguments before it.
func isScriptArg(argv []string, i int) bool {
	switch {
	case i == 1:
		return strings.EqualFold(argv[0], "EVAL") || strings.EqualFold(argv[0], "EVAL_RO")
	case i == 2:
		return strings.EqualFold(argv[0], "SCRIPT") && strings.EqualFold(argv[1], "LOAD")
	}
	return false
}
