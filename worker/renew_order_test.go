package worker

import (
	"bufio"
	"bytes"
	"testing"
	"time"

	"github.com/lockfault/lockfault/lockimpl"
)

// A lock may renew a lease between its Acquire's return and the grant's
// reply (rueidislock's later key answers did): the renewal is written after
// the grant, never before it (the harness refuses a renew of a lease it was
// not granted); a renewal inside Acquire, before the lease has an id, is
// carried by the grant's own validity.
func TestRenewalNeverPrecedesItsGrant(t *testing.T) {
	var out syncBuffer
	w := New(&out)
	lease := &lockimpl.Lease{Resource: "k", Token: "t", ValidUntil: time.Now().Add(time.Second), Validity: time.Second}
	w.renewed(lease) // inside Acquire: no id yet
	w.mu.Lock()
	w.lock = nopLock{}
	w.mu.Unlock()
	w.testNewLock = nil
	m := w.do(Command{Cmd: "acquire", Op: 1, Key: "k", TTLMs: 1000, Lease: "c1-1"})
	w.mu.Lock()
	granted := w.leases["c1-1"]
	w.mu.Unlock()
	granted.ValidUntil, granted.Validity = time.Now().Add(2*time.Second), 2*time.Second
	w.renewed(granted) // after Acquire, before the reply
	if out.b.Len() != 0 {
		t.Fatalf("written before the grant: %s", out.b.String())
	}
	w.send(m)
	w.renewed(granted) // after the reply: at once
	var types []string
	sc := bufio.NewScanner(bytes.NewReader(out.b.Bytes()))
	for sc.Scan() {
		msg, err := DecodeMessage(sc.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, msg.Type+" "+msg.Lease)
	}
	want := []string{"reply c1-1", "renew c1-1", "renew c1-1"}
	if len(types) != len(want) || types[0] != want[0] || types[1] != want[1] || types[2] != want[2] {
		t.Errorf("wrote %v, want %v", types, want)
	}
}
