package worker

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/lockfault/lockfault/lockimpl"
)

// nopLock is a lock that needs no server: the fuzz target exercises the
// command loop (decoding, the order rules, control commands), not a lock.
type nopLock struct{}

func (nopLock) Acquire(context.Context, string, lockimpl.AcquireOptions) (*lockimpl.Lease, error) {
	return &lockimpl.Lease{}, nil
}
func (nopLock) Release(context.Context, *lockimpl.Lease) error { return nil }
func (nopLock) Close() error                                   { return nil }

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// FuzzCommandLoop feeds arbitrary stdin to a worker. Whatever comes in, the
// worker must not panic or hang, and everything it writes must be a valid
// message: an error names a line that exists, a known code, each op is
// answered at most once and only if it was sent, and ready comes at most
// once, only for an init.
func FuzzCommandLoop(f *testing.F) {
	f.Fuzz(func(t *testing.T, in []byte) {
		var out syncBuffer
		w := New(&out)
		w.testNewLock = func(name string, cfg lockimpl.Config) (lockimpl.Lock, error) {
			if _, ok := lockimpl.Lookup(name); !ok {
				return nil, fmt.Errorf("unknown lock %q", name)
			}
			return nopLock{}, nil
		}
		w.testDo = func(c Command) Message { return Message{Type: "reply", Op: c.Op, Status: StatusOK} }
		if err := w.Serve(bytes.NewReader(in)); err != nil {
			t.Fatalf("Serve: %v", err)
		}
		lines := bytes.Count(in, []byte("\n")) + 1
		answered := map[int64]bool{}
		readies := 0
		sc := bufio.NewScanner(bytes.NewReader(out.b.Bytes()))
		sc.Buffer(nil, MaxLine)
		for sc.Scan() {
			m, err := DecodeMessage(sc.Bytes())
			if err != nil {
				t.Fatalf("the worker wrote an invalid message %q: %v", sc.Bytes(), err)
			}
			switch m.Type {
			case "ready":
				readies++
				if readies > 1 {
					t.Fatalf("two readies")
				}
				if !bytes.Contains(in, []byte(`"init"`)) {
					t.Fatalf("ready without an init")
				}
				if err := ValidateReady(m); err != nil {
					t.Fatal(err)
				}
			case "error":
				if m.Line < 1 || m.Line > lines {
					t.Fatalf("error names line %d of %d: %+v", m.Line, lines, m)
				}
				if m.Code == "" && !bytes.Contains(in, []byte(`"init"`)) && !bytes.Contains(in, []byte(`"endpoints"`)) {
					t.Fatalf("an error without a code for neither init nor endpoints: %+v", m)
				}
			case "reply":
			case TypeClock:
				if m.WallMs <= 0 || !bytes.Contains(in, []byte(`"clock"`)) {
					t.Fatalf("a clock message without a wall time or a clock command: %+v", m)
				}
			default:
				t.Fatalf("unexpected message %+v", m)
			}
			if m.Op != 0 {
				if answered[m.Op] {
					t.Fatalf("op %d answered twice", m.Op)
				}
				answered[m.Op] = true
				if !bytes.Contains(in, []byte(fmt.Sprint(m.Op))) {
					t.Fatalf("op %d was never sent", m.Op)
				}
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	})
}
