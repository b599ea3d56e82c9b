// Package register is the protected resource: an integer register served by
// the harness, outside every fault domain. Critical sections read it, wait,
// and write back the value plus one; a lost update is the footprint of two
// critical sections interleaving. In fencing mode it rejects any access whose
// fencing token is older than the newest it has seen, as the storage layer in
// Kleppmann's fencing scheme does.
//
// Wire protocol (one line each way, space-separated):
//
//	READ <client> <lease> <fence> [<key>]            -> "OK <value>" | "REJECTED <newest>"
//	WRITE <client> <lease> <fence> <value> [<key>]   -> "OK" | "REJECTED <newest>"
//
// A fence of 0 means "no fencing token". The key is the name the lock
// guards: the server keeps one register, and one newest fencing token, per
// key; a request without a key uses the register of the empty key.
package register

import (
	"bufio"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/lockfault/lockfault/history"
)

// Server is the resource. Record receives one history.Access event per
// request, stamped at the moment the request was applied.
type Server struct {
	Fencing bool
	Record  func(history.Event)

	mu     sync.Mutex
	value  map[string]int64 // per key
	newest map[string]int64 // per key: the newest fencing token seen
	ln     net.Listener
	wg     sync.WaitGroup
	conns  map[net.Conn]struct{}
}

// Listen starts serving on addr (use "127.0.0.1:0" for any port).
func (s *Server) Listen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	s.ln = ln
	s.conns = map[net.Conn]struct{}{}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns[c] = struct{}{}
			s.mu.Unlock()
			s.wg.Add(1)
			go s.serve(c)
		}
	}()
	return nil
}

// Addr is where the server listens.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Value returns the current value of the register of the empty key.
func (s *Server) Value() int64 { return s.ValueOf("") }

// ValueOf returns the current value of a key's register.
func (s *Server) ValueOf(key string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.value[key]
}

// Close stops the server and waits for its connections to end.
func (s *Server) Close() {
	if s.ln == nil {
		return
	}
	s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *Server) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		resp := s.handle(strings.TrimSpace(line))
		if _, err := c.Write([]byte(resp + "\n")); err != nil {
			return
		}
	}
}

// handle applies one request. Timestamp, apply and record happen under one
// mutex, so the recorded order is the order of effect.
func (s *Server) handle(line string) string {
	f := strings.Fields(line)
	if len(f) < 4 {
		return "ERR want READ <client> <lease> <fence> [<key>] | WRITE <client> <lease> <fence> <value> [<key>]"
	}
	fence, err := strconv.ParseInt(f[3], 10, 64)
	if err != nil {
		return "ERR fence: " + err.Error()
	}
	var val int64
	key := ""
	switch f[0] {
	case "READ":
		if len(f) != 4 && len(f) != 5 {
			return "ERR READ takes 3 or 4 arguments: <client> <lease> <fence> [<key>]"
		}
		if len(f) == 5 {
			key = f[4]
		}
	case "WRITE":
		if len(f) != 5 && len(f) != 6 {
			return "ERR WRITE takes 4 or 5 arguments: <client> <lease> <fence> <value> [<key>]"
		}
		if len(f) == 6 {
			key = f[5]
		}
		if val, err = strconv.ParseInt(f[4], 10, 64); err != nil {
			return "ERR value: " + err.Error()
		}
	default:
		return "ERR unknown request " + strconv.Quote(f[0])
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.value == nil {
		s.value, s.newest = map[string]int64{}, map[string]int64{}
	}
	ev := history.Event{Kind: history.Access, Process: f[1], Lease: f[2], Key: key, Fence: fence, Time: history.Now()}
	rejected := s.Fencing && fence > 0 && fence < s.newest[key]
	if fence > s.newest[key] && s.Fencing {
		s.newest[key] = fence
	}
	var resp string
	switch {
	case rejected:
		resp = fmt.Sprintf("REJECTED %d", s.newest[key])
	case f[0] == "READ":
		resp = fmt.Sprintf("OK %d", s.value[key])
		val = s.value[key]
	default:
		s.value[key] = val
		resp = "OK"
	}
	ev.Access = strings.ToLower(f[0])
	ev.Rejected = rejected
	if !rejected {
		ev.Value = history.Int64(val)
	}
	if s.Record != nil {
		s.Record(ev)
	}
	return resp
}
