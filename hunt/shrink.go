package hunt

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/scenarios"
)

// shrinker minimises a failing schedule by delta debugging (DEMi's
// approach): first over the faults of the cycle, then over its anchor (a
// client fault aimed at the client the cycle starts with; a grant instead
// of a command), then over each remaining fault's parameters (a weaker
// kind, shorter, earlier), then over the workload. The harness is not
// deterministic, so a candidate still fails when the same fingerprint
// reappears within Tries runs; every candidate, kept or dropped, and the
// runs it took, goes into the shrink log.
type shrinker struct {
	sp   *Space
	exec Exec
	opt  Options
	id   string // the fingerprint to keep
	runs int
	n    int // candidates tried
	log  []string
}

func (sh *shrinker) logf(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	sh.log = append(sh.log, line)
	fmt.Fprintln(sh.opt.Log, "  shrink: "+line)
}

// fails runs a candidate up to Tries times (all of them when strict) and
// says whether the fingerprint showed, and in which run's folder.
func (sh *shrinker) fails(ctx context.Context, s *Schedule, strict bool) (bool, string, int) {
	sh.n++
	c := s.clone()
	c.Shrink = sh.n
	sc := c.Compile(c.Name(), sh.sp.Info.Name, []string{"safe"})
	var dir string
	hits := 0
	for t := 1; t <= sh.opt.Tries; t++ {
		if sh.runs >= sh.opt.ShrinkRuns || ctx.Err() != nil {
			return false, "", t - 1
		}
		sh.runs++
		out, err := sh.exec(ctx, sc)
		if err == nil && out != nil && has(Fingerprints(out.Result, sh.sp.Info, c.TTL), sh.id) {
			hits++
			dir = out.Dir
			if !strict {
				return true, dir, t
			}
		} else if strict {
			return false, "", t
		}
	}
	return strict && hits == sh.opt.Tries, dir, sh.opt.Tries
}

// shrink returns the smallest schedule that still fails, the folder of
// one of its failing runs, and whether the original never failed again
// (flaky: reported as such, never as fixed).
func (sh *shrinker) shrink(ctx context.Context, orig *Schedule) (*Schedule, string, bool) {
	ok, dir, t := sh.fails(ctx, orig, false)
	sh.logf("original (%d faults): %s in %d of %d tries", len(orig.Events), keptWord(ok), boolInt(ok), t)
	if !ok {
		sh.logf("the original never failed again within %d tries: flaky, not shrunk", sh.opt.Tries)
		return orig, "", true
	}
	st := &shrinking{sh: sh, ctx: ctx, cur: orig, dir: dir}
	st.dropFaults()
	st.aimFaults()
	st.weakenFaults()
	st.cutWorkload()
	cur, dir := st.cur, st.dir
	sh.logf("minimal (%d faults, was %d): %d runs for %d candidates", len(cur.Events), len(orig.Events), sh.runs, sh.n)
	return cur, dir, false
}

// shrinking is a schedule being shrunk: cur, the smallest candidate found
// so far that still fails, and dir, the report of its failing run.
type shrinking struct {
	sh  *shrinker
	ctx context.Context
	cur *Schedule
	dir string
}

// try runs a candidate and keeps it when it still fails (every try, if
// strict); false once the shrink's budget of runs is spent.
func (st *shrinking) try(what string, cand *Schedule, strict bool) bool {
	sh, ctx := st.sh, st.ctx
	if sh.runs >= sh.opt.ShrinkRuns || ctx.Err() != nil {
		return false
	}
	ok, d, t := sh.fails(ctx, cand, strict)
	sh.logf("%s: %s after %d run(s): %s", what, keptWord(ok), t, strings.Join(cand.Faults(), "; "))
	if ok {
		st.cur, st.dir = cand, d
	}
	return ok
}

// dropFaults is the shrink's first step, the faults: drop every one, then
// complements of ever smaller chunks (ddmin), down to single faults.
func (st *shrinking) dropFaults() {
	if len(st.cur.Events) > 0 {
		c := st.cur.clone()
		c.Events = nil
		st.try("drop every fault", c, false)
	}
	for n := 2; len(st.cur.Events) > 1; {
		chunks := split(len(st.cur.Events), n)
		reduced := false
		for _, ch := range chunks {
			c := st.cur.clone()
			c.Events = append(append([]Event{}, c.Events[:ch[0]]...), c.Events[ch[1]:]...)
			if st.try(fmt.Sprintf("drop faults %d..%d", ch[0]+1, ch[1]), c, false) {
				n = max(n-1, 2)
				reduced = true
				break
			}
		}
		if !reduced {
			if n >= len(st.cur.Events) {
				break
			}
			n = min(2*n, len(st.cur.Events))
		}
	}
}

// aimFaults is the second step, the anchor. A client fault that hits a named client (c1, the
// others), or a node fault on the links of one (clients=c1), lands on
// the client the cycle starts with only when that client happens to be
// it: aimed at that client (the one whose command fired the anchor, or
// the holder the grant made), it lands there in every cycle. Then a
// grant instead of a command.
func (st *shrinking) aimFaults() {
	aim := lockfault.TargetHolder
	if st.cur.Anchor != nil {
		aim = lockfault.TargetTrigger
	}
	for i := 0; i < len(st.cur.Events); i++ {
		e := st.cur.Events[i]
		if clientFault(e.Fault) && e.Target != aim {
			c := st.cur.clone()
			c.Events[i].Target = aim
			st.try(fmt.Sprintf("fault %d: on %s instead of %s", i+1, aim, e.Target), c, false)
		}
		if v, ok := e.Params["clients"]; ok && v != aim {
			c := st.cur.clone()
			c.Events[i].Params["clients"] = aim
			st.try(fmt.Sprintf("fault %d: on the links of %s instead of %s", i+1, aim, v), c, false)
		}
	}
	if st.cur.Anchor != nil {
		c := st.cur.clone()
		c.Anchor = nil
		for i := range c.Events {
			if c.Events[i].Target == "trigger" {
				c.Events[i].Target = "holder"
			}
		}
		st.try("anchor on a grant instead of "+st.cur.Anchor.String(), c, false)
	}
}

// weakenFaults is the third step, each fault's parameters: a weaker kind,
// half as long, at once.
func (st *shrinking) weakenFaults() {
	for i := 0; i < len(st.cur.Events); i++ {
		if w, ok := weaker[st.cur.Events[i].Fault]; ok {
			c := st.cur.clone()
			c.Events[i] = weaken(c.Events[i], w, st.cur.TTL)
			st.try(fmt.Sprintf("fault %d: %s instead of %s", i+1, w, st.cur.Events[i].Fault), c, false)
		}
		for st.cur.Events[i].Dur >= 200*time.Millisecond {
			c := st.cur.clone()
			c.Events[i].Dur = (c.Events[i].Dur / 2).Round(time.Millisecond)
			if !st.try(fmt.Sprintf("fault %d: %v long instead of %v", i+1, c.Events[i].Dur, st.cur.Events[i].Dur), c, false) {
				break
			}
		}
		if st.cur.Events[i].At > 0 {
			c := st.cur.clone()
			c.Events[i].At = 0
			st.try(fmt.Sprintf("fault %d: at once instead of at +%v", i+1, st.cur.Events[i].At), c, false)
		}
	}
}

// cutWorkload is the last step, the workload, then the cycles (fewer cycles
// must fail every try: they are what makes one run reproduce).
func (st *shrinking) cutWorkload() {
	for _, w := range workloadCuts {
		c := st.cur.clone()
		if w.cut(&c.Workload) {
			st.try("workload: "+w.what, c, false)
		}
	}
	if st.cur.Cycles > 1 {
		c := st.cur.clone()
		c.Cycles = 1
		st.try("1 cycle instead of "+fmt.Sprint(st.cur.Cycles), c, true)
	}
}

// split cuts n items into k chunks: [from, to) pairs.
func split(n, k int) [][2]int {
	var out [][2]int
	for i := 0; i < k; i++ {
		from, to := i*n/k, (i+1)*n/k
		if to > from {
			out = append(out, [2]int{from, to})
		}
	}
	return out
}

// weaker is the weaker fault each kind shrinks to.
var weaker = map[string]string{
	"kill":             "pause-node",
	"power-loss":       "kill",
	"restart":          "pause-node",
	"partition-client": "latency",
	"crash-client":     "pause-client",
	"clone-client":     "pause-client",
}

func weaken(e Event, to string, ttl time.Duration) Event {
	w := Event{Fault: to, Target: e.Target, At: e.At, Dur: e.Dur}
	if w.Dur == 0 {
		w.Dur = ttl
	}
	switch to {
	case "kill":
		w.Params, w.Dur = map[string]string{"restart": e.Params["restart"]}, 0
	case "latency":
		// On the same clients' links as the fault it weakens.
		w.Params = map[string]string{"latency": (ttl / 2).String(), "jitter": "0s", "clients": "all"}
		if c := e.Params["clients"]; c != "" {
			w.Params["clients"] = c
		}
	}
	return w
}

var workloadCuts = []struct {
	what string
	cut  func(w *scenarios.Workload) bool
}{
	{"one client fewer", func(w *scenarios.Workload) bool {
		if w.Clients <= 2 {
			return false
		}
		w.Clients--
		return true
	}},
	{"one key", func(w *scenarios.Workload) bool { return set(&w.Keys, 0) }},
	{"no think time", func(w *scenarios.Workload) bool { return setD(&w.Think) }},
	{"no re-entry", func(w *scenarios.Workload) bool { return set(&w.Reentry, 0) }},
	{"no extends", func(w *scenarios.Workload) bool {
		w.ExtendEvery = 0
		return set(&w.Extends, 0)
	}},
	{"no old-lease releases", func(w *scenarios.Workload) bool {
		was := w.ReleaseOld
		w.ReleaseOld = false
		return was
	}},
	{"a plain hold", func(w *scenarios.Workload) bool { return setD(&w.HoldUntilValid) }},
	{"no validity check before writing", func(w *scenarios.Workload) bool { return setD(&w.WriteIfValid) }},
}

func set(p *int, v int) bool {
	if *p == v {
		return false
	}
	*p = v
	return true
}

func setD(p *scenarios.Duration) bool {
	if *p == 0 {
		return false
	}
	*p = 0
	return true
}

func keptWord(ok bool) string {
	if ok {
		return "fails (kept)"
	}
	return "passes (dropped)"
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// writeLog writes the shrink log.
func (sh *shrinker) writeLog(path string) error {
	head := fmt.Sprintf("# shrinking %s: a candidate still fails when %s reappears within %d run(s); %d runs spent (bound %d)\n",
		sh.id, sh.id, sh.opt.Tries, sh.runs, sh.opt.ShrinkRuns)
	return os.WriteFile(path, []byte(head+strings.Join(sh.log, "\n")+"\n"), 0o644)
}
