package resp

import (
	"bytes"
	"net"
	"strings"
	"testing"
)

// CLIENT REPLY SKIP leaves a command without a reply: the tap stops
// pairing (reply triggers no longer fire there, request triggers still
// do) and the client gets exactly what the node sent.
func TestTapClientReplySkip(t *testing.T) {
	node := startRedis(t)
	reg := NewRegistry()
	tap := newTap(t, reg, "c1", "n1", node)
	atReply := arm(t, reg, Trigger{Names: []string{"GET"}, At: AtReply})
	atRequest := arm(t, reg, Trigger{Names: []string{"GET"}})
	c := dialRaw(t, tap.Addr())
	c.Write([]byte(resp("CLIENT", "REPLY", "SKIP") + resp("SET", "a", "1") + resp("GET", "a")))
	if got := c.readReplies(t, 1); string(got) != "$1\r\n1\r\n" {
		t.Fatalf("replies %q, want only GET's", got)
	}
	released(t, atRequest)
	notFired(t, atReply)
	notes := reg.Notes()
	if len(notes) != 1 || notes[0].Kind != NoteUnpaired || !strings.Contains(notes[0].Detail, "CLIENT REPLY SKIP") {
		t.Errorf("notes %+v, want one unpaired note naming CLIENT REPLY SKIP", notes)
	}
}

// Replies the tap cannot parse reach the client untouched, and a note says
// why. The upstream here is a stand-in that answers with a bad type byte
// (a real node never does).
func TestTapPassesThroughBadReplies(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	answer := []byte("+OK\r\n?what\r\n+after\r\n")
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.Read(make([]byte, 64))
		c.Write(answer)
	}()
	reg := NewRegistry()
	tap := newTap(t, reg, "c1", "n1", ln.Addr().String())
	c := dialRaw(t, tap.Addr())
	c.Write([]byte(resp("PING") + resp("PING")))
	got, _ := readAll(c)
	if !bytes.Equal(got, answer) {
		t.Fatalf("client got %q, want %q", got, answer)
	}
	notes := reg.Notes()
	if len(notes) != 1 || notes[0].Kind != NotePassthrough || !strings.Contains(notes[0].Detail, "unknown type byte") {
		t.Errorf("notes %+v, want one passthrough note on the type byte", notes)
	}
}

// The chunking check of the parser tests can fail: a framer that ends a
// message wherever a piece ends is caught.
func TestFramingCheckCanFail(t *testing.T) {
	broken := func(data []byte, sizes ...int) framed {
		return frameWith(data, sizes, func(b []byte) (int, string, bool, error) { return len(b), "message", true, nil })
	}
	in := []byte(resp("PING"))
	if broken(in).equal(broken(in, 1)) {
		t.Fatal("messages split at piece ends go unnoticed")
	}
	if !frameRequests(in).equal(frameRequests(in, 1)) {
		t.Fatal("the request parser splits messages at piece ends")
	}
}
