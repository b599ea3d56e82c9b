package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
)

// The harness's toxiproxy server logs every connection it accepts
// ("Accepted client", with the proxy's name) before it dials the upstream.
// acceptLog reads that log and counts the accepted connections per proxy:
// a link fault whose links nobody had open when it began is judged at its
// heal by whether a client dialed one of them while it lasted (a dial into
// a cut link is accepted and then reset, and leaves nothing open to see).

const (
	maxLogLine     = 4096    // longer lines of the server's log are skipped, not counted
	maxAcceptNames = 1 << 16 // proxies counted at once (a harness deletes a run's as it ends)
)

// acceptLog counts "Accepted client" lines per proxy name. It is the
// server's stdout: it must never block nor fail a write.
type acceptLog struct {
	mu       sync.Mutex
	partial  []byte // a line not ended yet
	skipping bool   // inside an overlong line: dropped up to its end
	counts   map[string]uint64
	full     bool // a name was not counted: maxAcceptNames reached
}

func newAcceptLog() *acceptLog { return &acceptLog{counts: map[string]uint64{}} }

func (a *acceptLog) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if a.skipping || len(a.partial)+len(p) > maxLogLine {
				a.partial, a.skipping = a.partial[:0], true
			} else {
				a.partial = append(a.partial, p...)
			}
			break
		}
		line := p[:i]
		p = p[i+1:]
		if a.skipping {
			a.skipping = false
			continue
		}
		if len(a.partial) > 0 {
			if len(a.partial)+len(line) > maxLogLine {
				a.partial = a.partial[:0]
				continue
			}
			line = append(a.partial, line...)
			a.partial = a.partial[:0]
		}
		a.line(line)
	}
	return n, nil
}

// line counts one log line (zerolog's JSON) when it says a proxy accepted
// a client.
func (a *acceptLog) line(line []byte) {
	if !bytes.Contains(line, []byte(`"Accepted client"`)) {
		return
	}
	var l struct {
		Name    string `json:"name"`
		Message string `json:"message"`
	}
	if json.Unmarshal(line, &l) != nil || l.Message != "Accepted client" || l.Name == "" {
		return
	}
	if _, ok := a.counts[l.Name]; !ok && len(a.counts) >= maxAcceptNames {
		a.full = true
		return
	}
	a.counts[l.Name]++
}

// read returns the counts of the named proxies (full names, with the run's
// prefix); an error when some could have gone uncounted.
func (a *acceptLog) read(names []string) (map[string]uint64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.full {
		return nil, fmt.Errorf("more than %d proxies counted at once: accepted connections not counted", maxAcceptNames)
	}
	out := make(map[string]uint64, len(names))
	for _, n := range names {
		out[n] = a.counts[n]
	}
	return out, nil
}

// forget drops the counts of proxies whose names start with prefix (a
// run's, as its proxies are deleted).
func (a *acceptLog) forget(prefix string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k := range a.counts {
		if strings.HasPrefix(k, prefix) {
			delete(a.counts, k)
		}
	}
}

// Accepted returns, for each named proxy of this run, how many connections
// the harness's toxiproxy server has accepted on it (since the proxy was
// made). An error for a proxy on the backend's own server (a remote
// daemon's peer proxies), whose log the harness does not read.
func (n *Net) Accepted(names []string) (map[string]uint64, error) {
	if n.accepts == nil {
		return nil, fmt.Errorf("the toxiproxy server's log is not read")
	}
	full := make([]string, 0, len(names))
	for _, name := range names {
		if n.peer != nil && isPeerProxy(name) {
			return nil, fmt.Errorf("proxy %s is on the backend's own toxiproxy server", name)
		}
		full = append(full, n.prefix+name)
	}
	counts, err := n.accepts.read(full)
	if err != nil {
		return nil, err
	}
	out := make(map[string]uint64, len(names))
	for _, name := range names {
		out[name] = counts[n.prefix+name]
	}
	return out, nil
}
