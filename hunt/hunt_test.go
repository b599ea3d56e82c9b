package hunt

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/pages"
	"github.com/lockfault/lockfault/resp"
	"github.com/lockfault/lockfault/runner"
	"github.com/lockfault/lockfault/scenarios"
)

// The generator is seeded: the same seed draws the same schedules, another
// seed others; and every schedule it draws, for every kind of built-in lock,
// is a scenario that passes the one validation (runner.Prepare) as it is.
func TestGeneratorIsSeededAndValid(t *testing.T) {
	for _, lock := range builtInLocks {
		subj := builtIn(t, lock)
		sp := NewSpace(subj.Info, BuiltInLimits(lock))
		sp.Commands = sampleShapes()
		a, b, c := NewGenerator(sp, 42), NewGenerator(sp, 42), NewGenerator(sp, 43)
		same, kinds := true, map[string]bool{}
		for i := 0; i < 200; i++ {
			sa, sb, sc := a.Next(), b.Next(), c.Next()
			if strings.Join(sa.Faults(), ";") != strings.Join(sb.Faults(), ";") || sa.Workload != sb.Workload {
				t.Fatalf("%s: seed 42 drew two different schedules %d: %v and %v", lock, i+1, sa.Faults(), sb.Faults())
			}
			same = same && strings.Join(sa.Faults(), ";") == strings.Join(sc.Faults(), ";")
			for _, e := range sa.Events {
				kinds[e.Fault] = true
				if slices.Contains(excluded(sp.Known), e.Fault) {
					t.Errorf("%s: drew %s, a fault of its known limits %v", lock, e.Fault, sp.Known)
				}
			}
			mustPrepare(t, subj, sa, lock)
		}
		if same {
			t.Errorf("%s: seeds 42 and 43 drew the same 200 schedules", lock)
		}
		if len(kinds) < len(sp.Faults)-1 {
			t.Errorf("%s: 200 schedules drew only %d of the %d fault kinds of its space (%v)", lock, len(kinds), len(sp.Faults), kinds)
		}
	}
}

// builtInLocks are the built-in locks of every kind the generator tests
// draw for; builtIn is one's subject.
var builtInLocks = []string{"single", "fenced", "redisson", "redlock", "etcd", "single-cluster"}

func builtIn(t *testing.T, lock string) runner.Subject {
	t.Helper()
	subj, err := runner.BuiltIn(context.Background(), lock)
	if err != nil {
		t.Fatal(err)
	}
	return subj
}

// mustPrepare: the schedule, compiled for a built-in lock, parses and
// passes the one validation (runner.Prepare) as it is.
func mustPrepare(t *testing.T, subj runner.Subject, s *Schedule, lock string) {
	t.Helper()
	data, err := s.Compile(s.Name(), lock, []string{"safe"}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := scenarios.Parse(s.Name()+".yaml", data)
	if err != nil {
		t.Fatalf("%s: schedule %d (derived by %v) does not parse: %v\n%s", lock, s.Index, s.Derived, err, data)
	}
	if _, err := runner.Prepare(context.Background(), parsed, &subj, runner.Overrides{}); err != nil {
		t.Fatalf("%s: schedule %d (derived by %v) is refused: %v\n%s", lock, s.Index, s.Derived, err, data)
	}
}

// A lock that measures validity on the client's wall clock is found only
// by a clock stepped back during its acquire while the client trusts the
// validity it reports: the generator draws that (repeated steps back with a
// validity-trusting workload) in a few percent of schedules, not once in a
// blue moon.
func TestGeneratorReachesSteppingClocks(t *testing.T) {
	g := reachGenerator(lockimpl.NeedsSingle, nil)
	const n = 2000
	repeated, aimed := 0, 0
	for i := 0; i < n; i++ {
		s := g.Next()
		for j, e := range s.Events {
			if e.Fault != "clock-client" || !strings.HasPrefix(e.Params["by"], "-") || s.Workload.HoldUntilValid == 0 {
				continue
			}
			switch {
			case e.Params["every"] != "":
				repeated++
			case j == 0 && e.Target == lockfault.TargetTrigger && s.Anchor.Op == scenarios.OpAcquire && s.Anchor.At == scenarios.AtRequest:
				aimed++
			}
		}
	}
	if repeated < n/100 || aimed < n/100 {
		t.Fatalf("of %d schedules, %d step a client's clock back repeatedly and %d step it inside an acquire, while it trusts its validity; want at least %d each", n, repeated, aimed, n/100)
	}
	t.Logf("of %d schedules: %d repeated steps back, %d aimed inside an acquire", n, repeated, aimed)
}

// A Redlock's extend is broken by a majority whose keys are gone while the
// holder extends on what is left (broken-extend-any-master was not found
// in 44 schedules, 10 minutes, when holders made one to three extends): one
// schedule in 15 must have a holder extending across a fault that harms a
// majority for a TTL or more (a holder that extended one to three times:
// none; extending across only when the workload already extended: 1 in 20).
func TestGeneratorExtendsAcrossNodeFaults(t *testing.T) {
	g := reachGenerator(lockimpl.NeedsMasters, []string{"node-clock"})
	const n = 2000
	across := 0
	for i := 0; i < n; i++ {
		s := g.Next()
		w := s.Workload
		if time.Duration(w.Extends)*w.ExtendEvery.D() < scale(s.TTL, extendAcrossTTLs) {
			continue
		}
		for _, e := range s.Events {
			long := e.Dur >= s.TTL
			if r, ok := e.Params["restart"]; ok {
				d, _ := time.ParseDuration(r)
				long = d >= s.TTL
			}
			if long && (e.Target == lockfault.TargetMajority || e.Target == lockfault.TargetAll) &&
				slices.Contains([]string{"kill", "power-loss", "pause-node", "partition-client"}, e.Fault) {
				across++
				break
			}
		}
	}
	if across < n/15 {
		t.Fatalf("of %d schedules, %d have a holder extending across a fault that harms a majority for a TTL or more; want at least %d", n, across, n/15)
	}
	t.Logf("of %d schedules: %d extend across a majority's harm", n, across)
}

// A lock that dates a validity from the reply instead of the request
// (broken-validity-from-end, broken-extend-from-end: not found in 36
// schedules, 10 minutes) shows only when replies are late and the client
// trusts the validity it was given: two in three of the schedules with
// late replies must have clients that hold until the reported validity.
func TestGeneratorTrustsValidityUnderLatency(t *testing.T) {
	g := reachGenerator(lockimpl.NeedsSingle, []string{"node-clock", "failover"})
	const n = 2000
	late, trusting := 0, 0
	for i := 0; i < n; i++ {
		s := g.Next()
		i := slices.IndexFunc(s.Events, func(e Event) bool {
			d, _ := time.ParseDuration(e.Params["latency"])
			return e.Fault == "latency" && d >= scale(s.TTL, 0.3)
		})
		if i < 0 {
			continue
		}
		late++
		if s.Workload.HoldUntilValid > 0 {
			trusting++
		}
	}
	if trusting*3 < late*2 {
		t.Fatalf("of %d schedules with replies 0.3 TTL late or more, %d have clients that trust the reported validity; want at least two in three (fewer than half did before)", late, trusting)
	}
	t.Logf("of %d schedules with late replies, %d trust the reported validity", late, trusting)
}

// The pauses Kleppmann's critique is about are found only where they
// land: a client stopped between two commands of its own release (a GET
// that compares, then a DEL: broken-get-then-del, not found in 36
// schedules, 10 minutes), or a holder stopped in its critical section
// (broken-const-fence, not found in 36), until the next holder's hold
// (its stale DEL, or write, lands there). Each must be drawn in one
// schedule in 40 or more: 19 and 21 of 2000 were, before the cycle's first
// fault and its anchor were weighted; 37 and 76 before pauses were drawn
// to end inside the next hold (resumeInNextHold). And a client stopped
// once its acquire was granted, before the lock dates the validity it
// reports, and trusting that validity (broken-validity-from-end, found in
// one hunt of two): one schedule in 50 or more (5 in 2000 were before the
// grant's reply became an anchor of its own).
func TestGeneratorPausesInsideOperations(t *testing.T) {
	// A lock without fencing: a fencing lock's space gives one schedule in
	// ten to cold restarts (TestGeneratorRestartsFencingLocksCold).
	sp := NewSpace(lockimpl.Info{Name: "x", Needs: lockfault.NeedsSingle, Caps: []string{lockimpl.CapExtend}}, []string{"node-clock"})
	sp.Commands = []resp.Shape{{Name: "SET", Key: "lock:*", Op: "acquire"}, {Name: "GET", Key: "lock:*", Op: "release"},
		{Name: "DEL", Key: "lock:*", Op: "release"}, {Name: "EVALSHA", Op: "extend"}}
	g := NewGenerator(sp, 1)
	const n = 2000
	midRelease, midSection, granted, extended := 0, 0, 0, 0
	for i := 0; i < n; i++ {
		s := g.Next()
		if len(s.Events) == 0 || s.Events[0].Fault != "pause-client" {
			continue
		}
		e, a := s.Events[0], s.Anchor
		hold := s.Workload.Hold.D()
		if v := s.Workload.HoldUntilValid.D(); v > 0 {
			hold = s.TTL - v
		}
		// The client resumes inside the next holder's hold: after what was
		// left of its key's TTL, before that and a hold more.
		if a != nil && e.Target == lockfault.TargetTrigger && e.Dur > s.TTL-hold && e.Dur < s.TTL &&
			((a.Name == "GET" && a.At != scenarios.AtRequest) || (a.Name == "DEL" && a.At == scenarios.AtRequest)) {
			midRelease++
		}
		if a == nil && e.Target == lockfault.TargetHolder && e.Dur > s.TTL && e.Dur < s.TTL+hold {
			midSection++
		}
		// Stopped once its acquire was granted, before it dates the
		// validity, and it holds until shortly before that validity.
		if a != nil && e.Target == lockfault.TargetTrigger && a.Op == "acquire" && a.At != scenarios.AtRequest &&
			a.Reply == scenarios.ReplyOK && s.Workload.HoldUntilValid > 0 {
			granted++
		}
		// Stopped once its extend succeeded, longer than the margin and
		// shorter than what was left of its validity, in a round of one
		// extend (the anchor fires on a round's first extend, and only the
		// last one's validity is trusted).
		if a != nil && e.Target == lockfault.TargetTrigger && a.Op == "extend" && a.At != scenarios.AtRequest &&
			a.Reply == scenarios.ReplyOK && s.Workload.HoldUntilValid > 0 && e.Dur > s.TTL/10 && e.Dur < s.TTL-s.Workload.ExtendEvery.D() &&
			s.Workload.Extends == 1 {
			extended++
		}
	}
	if midRelease < n/40 || midSection < n/40 || granted < n/50 || extended < n/200 {
		t.Fatalf("of %d schedules, %d pause a client between its release's GET and DEL, and %d a holder in its section, until the next holder's hold (want at least %d each); %d a client granted, before it dates its validity (want at least %d); %d a client extended (want at least %d)",
			n, midRelease, midSection, n/40, granted, n/50, extended, n/200)
	}
	t.Logf("of %d schedules: %d pause a client inside its release, %d a holder in its section, until the next holder's hold; %d a client granted, %d a client extended, before it dates its validity", n, midRelease, midSection, granted, extended)
}

// A lock that renews its holders' leases (redisson's watchdog) is hunted
// with its renewals on whenever the holds outlast the TTL, and always in the
// fault-free first schedule; without them, redisson takes the TTL as a fixed
// lease and a hold longer than it tests nothing it claims
// (broken-no-renewal, redisson whose watchdog options are dropped, was not
// found in 34 schedules). A lock that declares no such options gets none.
func TestGeneratorTurnsRenewalsOn(t *testing.T) {
	info := lockimpl.Info{Name: "w", Needs: lockfault.NeedsSingle, Caps: []string{lockimpl.CapWatchdog}, Options: []string{"lease", "watchdog", "wait-replicas"}}
	g := NewGenerator(NewSpace(info, nil), 1)
	long := 0
	for i := 1; i <= 200; i++ {
		s := g.Next()
		sc := s.Compile(s.Name(), info.Name, []string{"safe"})
		if s.Workload.Hold.D() <= s.TTL {
			if i == 1 {
				t.Fatalf("the first schedule holds %v, not longer than its TTL %v", s.Workload.Hold, s.TTL)
			}
			if sc.Lock.Options != nil {
				t.Fatalf("schedule %d holds %v (TTL %v) with options %v; want none", i, s.Workload.Hold, s.TTL, sc.Lock.Options)
			}
			continue
		}
		long++
		want := map[string]string{"watchdog": "true", "lease": s.TTL.String()}
		if !maps.Equal(sc.Lock.Options, want) {
			t.Fatalf("schedule %d holds %v (TTL %v) with options %v; want %v", i, s.Workload.Hold, s.TTL, sc.Lock.Options, want)
		}
	}
	if long < 50 {
		t.Fatalf("%d of 200 schedules hold longer than the TTL; want about half", long)
	}
	if o := renewalOptions(lockimpl.Info{Caps: []string{lockimpl.CapWatchdog}}, time.Second); o != nil {
		t.Fatalf("a lock without the options got %v", o)
	}
}

// Known limits exclude their faults; a built-in lock's come from its
// promise table; an unknown name is refused with the allowed ones.
func TestKnownLimits(t *testing.T) {
	if got := BuiltInLimits("single"); !slices.Equal(got, []string{"failover", "node-clock"}) {
		t.Errorf("single's known limits: %v, want [failover node-clock]", got)
	}
	sp := NewSpace(lockimpl.Info{Name: "x", Needs: lockimpl.NeedsSingle}, []string{"node-clock", "client-pause"})
	for _, f := range []string{"clock-jump", "clock-drift", "pause-client"} {
		if slices.Contains(sp.Faults, f) {
			t.Errorf("space draws %s despite its known limits", f)
		}
	}
	if _, err := ParseKnown([]string{"node-clock", "bogus"}); err == nil || !strings.Contains(err.Error(), "allowed: failover") {
		t.Errorf("an unknown limit: %v", err)
	}
	// go-zero does not count re-entries (its card): its hunt draws no
	// re-entrant workload, and looks for something else; a reentrant lock
	// without that limit still draws them, with the learning search's
	// workload mutations too.
	if got := BuiltInLimits("go-zero"); !slices.Contains(got, "reentry") {
		t.Errorf("go-zero's known limits: %v, want reentry among them", got)
	}
	reentries := func(known []string) (n int) {
		sp := NewSpace(lockimpl.Info{Name: "x", Needs: lockimpl.NeedsSingle, Caps: []string{lockimpl.CapReentrant}}, known)
		sp.Commands = sampleShapes()
		for _, g := range []*Generator{NewGenerator(sp, 1), NewPlainGenerator(sp, 1)} {
			var prev *Schedule
			for range 200 {
				s := g.Next()
				if prev != nil {
					s = g.Mutate(s, prev)
				}
				if s.Workload.Reentry > 1 {
					n++
				}
				prev = s
			}
		}
		return n
	}
	if n := reentries(nil); n == 0 {
		t.Errorf("a reentrant lock drew no re-entry in 400 schedules")
	}
	if n := reentries([]string{"reentry"}); n != 0 {
		t.Errorf("with the known limit reentry: %d of 400 schedules re-enter, want none", n)
	}
}

// reachGenerator is seed 1's generator for a lock that can extend, with the
// given needs and known limits, that has seen sampleShapes: the reach tests
// count what its draws contain.
func reachGenerator(needs lockfault.Needs, known []string) *Generator {
	sp := NewSpace(lockimpl.Info{Name: "x", Needs: needs, Caps: []string{lockimpl.CapExtend}}, known)
	sp.Commands = sampleShapes()
	return NewGenerator(sp, 1)
}

func sampleShapes() []resp.Shape {
	return []resp.Shape{{Name: "SET", Key: "lock:*", Op: "acquire"}, {Name: "EVALSHA", Op: "release"}, {Name: "EVAL", Op: "extend"}}
}

// fakeExec judges a scenario without running it, by a rule on its steps:
// the shrinker's logic is under test here, not Redis.
func fakeExec(rule func(sc *scenarios.Scenario) bool, runs *int) Exec {
	return func(ctx context.Context, sc *scenarios.Scenario) (*runner.Outcome, error) {
		*runs++
		res := &checker.Result{Verdict: checker.ClassSafe, Observed: []string{checker.ClassSafe}}
		if rule(sc) {
			res.Verdict, res.Observed = checker.ClassOverlap, []string{checker.ClassOverlap}
			res.Findings = []checker.Finding{{Class: checker.ClassOverlap, Kind: "both-valid", Detail: "two holders"}}
		}
		return &runner.Outcome{Dir: "fake", Result: res}, nil
	}
}

// pausedFor is how long the scenario's pause-client lasts before its heal.
func pausedFor(sc *scenarios.Scenario) time.Duration {
	var d time.Duration
	in := false
	for _, st := range sc.Nemesis.Steps {
		switch {
		case st.Fault == "pause-client":
			in = true
		case st.Heal == "pause-client" || st.Heal == "all":
			in = false
		case in && st.Sleep > 0:
			d += st.Sleep.D()
		}
	}
	return d
}

// The shrinker drops the faults that do not matter, shortens the one that
// does down to what still fails, and trims the workload; each candidate is
// in its log.
func TestShrinkerKeepsOnlyWhatMatters(t *testing.T) {
	info := lockimpl.Info{Name: "x", Needs: lockimpl.NeedsSingle, Caps: []string{lockimpl.CapExtend}}
	orig := &Schedule{Seed: 1, Index: 5, TTL: time.Second, Cycles: 2,
		Topology: scenarios.Topology{Kind: "standalone"},
		Workload: scenarios.Workload{Clients: 3, Hold: scenarios.Duration(300 * time.Millisecond), Keys: 2, Think: scenarios.Duration(50 * time.Millisecond)},
		Events: []Event{
			{Fault: "latency", Target: "primary", At: 0, Dur: 900 * time.Millisecond, Params: map[string]string{"latency": "50ms", "jitter": "0s", "clients": "all"}},
			{Fault: "pause-client", Target: "holder", At: 200 * time.Millisecond, Dur: 1600 * time.Millisecond},
			{Fault: "kill", Target: "primary", At: 500 * time.Millisecond, Params: map[string]string{"restart": "0s"}},
		}}
	runs := 0
	rule := func(sc *scenarios.Scenario) bool { return pausedFor(sc) >= time.Second }
	opt := Options{Runs: 1, Tries: 2, ShrinkRuns: 100}
	if err := opt.Check(); err != nil {
		t.Fatal(err)
	}
	sh := &shrinker{sp: &Space{Info: info}, exec: fakeExec(rule, &runs), opt: opt, id: "overlap/both-valid"}
	min, _, flaky := sh.shrink(context.Background(), orig)
	if flaky {
		t.Fatal("a schedule that always fails was called flaky")
	}
	if len(min.Events) != 1 || min.Events[0].Fault != "pause-client" {
		t.Fatalf("minimal faults %v, want the pause alone", min.Faults())
	}
	if d := min.Events[0].Dur; d < time.Second || d > 1600*time.Millisecond {
		t.Errorf("the pause lasts %v, want from 1s (what fails) to 1.6s", d)
	}
	if min.Workload.Clients != 2 || min.Workload.Keys != 0 || min.Cycles != 1 {
		t.Errorf("workload %+v, %d cycles: want 2 clients, 1 key, 1 cycle", min.Workload, min.Cycles)
	}
	if !rule(min.Compile("m", "x", nil)) {
		t.Error("the minimal schedule does not fail")
	}
	if len(sh.log) < 5 || sh.runs != runs {
		t.Errorf("shrink log of %d lines for %d runs (counted %d)", len(sh.log), runs, sh.runs)
	}

	// A client fault of an anchored cycle that fails when it hits c1 (whose
	// command fired, in this fake) is aimed at the trigger: it then fails
	// in every cycle, whichever client's command fires.
	anchored := orig.clone()
	anchored.Anchor = &scenarios.CommandMatch{Name: "GET", Op: scenarios.OpRelease, At: scenarios.AtReply, Reply: scenarios.ReplyAny}
	anchored.Events[1].Target = "c1"
	onFired := func(sc *scenarios.Scenario) bool {
		for _, st := range sc.Nemesis.Steps {
			if st.Fault == "pause-client" && (st.Target == "c1" || st.Target == lockfault.TargetTrigger) {
				return true
			}
		}
		return false
	}
	sh = &shrinker{sp: &Space{Info: info}, exec: fakeExec(onFired, &runs), opt: opt, id: "overlap/both-valid"}
	if min, _, _ := sh.shrink(context.Background(), anchored); len(min.Events) != 1 || min.Events[0].Target != lockfault.TargetTrigger || min.Anchor == nil {
		t.Errorf("minimal %v (anchor %v); want the pause on the trigger, anchored", min.Faults(), min.Anchor)
	}

	// Unanchored, a fault on the links of c1 that fails when c1 holds (in
	// this fake) is aimed at the holder.
	cut := &Schedule{Seed: 1, Index: 6, TTL: time.Second, Cycles: 1, Topology: scenarios.Topology{Kind: "standalone"},
		Workload: scenarios.Workload{Clients: 2, Hold: scenarios.Duration(300 * time.Millisecond)},
		Events:   []Event{{Fault: "partition-client", Target: "primary", Dur: 900 * time.Millisecond, Params: map[string]string{"clients": "c1", "mode": "reset"}}}}
	onHolder := func(sc *scenarios.Scenario) bool {
		return slices.ContainsFunc(sc.Nemesis.Steps, func(st scenarios.Step) bool {
			return st.Fault == "partition-client" && (st.Params["clients"] == "c1" || st.Params["clients"] == lockfault.TargetHolder)
		})
	}
	sh = &shrinker{sp: &Space{Info: info}, exec: fakeExec(onHolder, &runs), opt: opt, id: "overlap/both-valid"}
	if min, _, _ := sh.shrink(context.Background(), cut); len(min.Events) != 1 || min.Events[0].Params["clients"] != lockfault.TargetHolder {
		t.Errorf("minimal %v; want the partition on the holder's links", min.Faults())
	}

	// A violation that never shows again is flaky, never "fixed".
	sh = &shrinker{sp: &Space{Info: info}, exec: fakeExec(func(*scenarios.Scenario) bool { return false }, &runs), opt: opt, id: "overlap/both-valid"}
	if _, _, flaky := sh.shrink(context.Background(), orig); !flaky {
		t.Error("a violation that never reappeared was not called flaky")
	}
}

// A minimal scenario that reproduces in fewer than 9 of 10 runs gets the
// cycles its measured rate says it needs (each cycle another chance), up
// to MaxStableCycles, and is measured again; every rate is kept.
func TestRateGetsTheCyclesItNeeds(t *testing.T) {
	for _, c := range []struct{ got, of, cycles, want int }{
		{6, 20, 2, 16},  // broken-extend-any-master: one cycle in six; 17 needed, capped
		{10, 20, 2, 9},  // half the runs of 2 cycles: 9 for 95 %
		{11, 20, 4, 16}, // 45 % missed with 4: 15.01 cycles
		{0, 20, 2, 4},   // nothing to estimate from: twice the cycles (finish does not ask)
		{17, 20, 2, 4},  // a high measurement: still twice
		{3, 20, 8, 16},
	} {
		if got := stableCycles([2]int{c.got, c.of}, c.cycles); got != c.want {
			t.Errorf("%d of %d with %d cycles: %d cycles next, want %d", c.got, c.of, c.cycles, got, c.want)
		}
	}

	// A violation that shows in one run in three with 2 cycles, and in
	// every run once it has 9 or more.
	runs := 0
	rule := func(sc *scenarios.Scenario) bool { return sc.Nemesis.Cycles >= 9 || runs%3 == 0 }
	sp := &Space{Info: lockimpl.Info{Name: "x", Needs: lockimpl.NeedsSingle}}
	f := &Finding{Fingerprint: Fingerprint{Class: checker.ClassOverlap, Kind: "both-valid"},
		Original: &Schedule{Seed: 1, Index: 1, TTL: time.Second, Cycles: 2, Topology: scenarios.Topology{Kind: "standalone"},
			Workload: scenarios.Workload{Clients: 2, Hold: scenarios.Duration(300 * time.Millisecond)},
			Events:   []Event{{Fault: "pause-client", Target: "holder", Dur: 1500 * time.Millisecond}}}}
	opt := Options{Runs: 1, NoShrink: true, Dir: t.TempDir()}
	if err := opt.Check(); err != nil {
		t.Fatal(err)
	}
	if err := finish(context.Background(), sp, fakeExec(rule, &runs), opt, f); err != nil {
		t.Fatal(err)
	}
	if f.Minimal.Cycles != 16 || f.Rate != [2]int{20, 20} || len(f.Unstable) != 1 || f.Unstable[0] != "6 of 20 with 2 cycles" {
		t.Errorf("%d cycles, rate %v, measured before %q; want 16 cycles, 20 of 20, after 6 of 20 with 2", f.Minimal.Cycles, f.Rate, f.Unstable)
	}
	if yaml, err := os.ReadFile(f.MinimalYAML); err != nil || !strings.Contains(string(yaml), "cycles: 16") {
		t.Errorf("minimal.yaml (%v):\n%s", err, yaml)
	}

	// One that never reproduces is measured once: 0 of 20, its 2 cycles.
	runs = 0
	f = &Finding{Fingerprint: f.Fingerprint, Original: f.Original}
	if err := finish(context.Background(), sp, fakeExec(func(*scenarios.Scenario) bool { return false }, &runs), opt, f); err != nil {
		t.Fatal(err)
	}
	if f.Minimal.Cycles != 2 || f.Rate != [2]int{0, 20} || runs != 20 || len(f.Unstable) != 0 {
		t.Errorf("never reproduced: %d cycles, rate %v, %d runs, measured before %q; want 2 cycles, 0 of 20, 20 runs", f.Minimal.Cycles, f.Rate, runs, f.Unstable)
	}
}

// Bad input is refused before anything starts.
func TestOptionsRefuseBadInput(t *testing.T) {
	for _, o := range []Options{{}, {Runs: -1}, {Runs: MaxRuns + 1}, {Time: time.Millisecond}, {Runs: 1, Tries: MaxTries + 1},
		{Runs: 1, KnownViolations: []string{"nope"}}, {Runs: 1, RateRuns: -2}} {
		if err := o.Check(); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

// An interrupted hunt keeps the findings it had, says it was interrupted,
// and its card is written; the budget of runs is kept.
func TestInterruptedHuntKeepsItsFindings(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runs := 0
	exec := fakeExec(func(sc *scenarios.Scenario) bool {
		if runs >= 4 {
			cancel() // Ctrl-C while shrinking
		}
		return pausedFor(sc) > 0
	}, &runs)
	sp := NewSpace(lockimpl.Info{Name: "x", Needs: lockimpl.NeedsSingle}, []string{"node-restart", "partition", "latency", "node-pause", "client-crash", "client-clock", "node-clock"})
	opt := Options{Seed: 5, Runs: 50, Dir: t.TempDir()}
	if err := opt.Check(); err != nil {
		t.Fatal(err)
	}
	res, err := Hunt(ctx, sp, exec, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted || len(res.Findings) != 1 {
		t.Fatalf("interrupted %v with %d findings, want interrupted with 1", res.Interrupted, len(res.Findings))
	}
	if err := WriteCard(res); err != nil {
		t.Fatal(err)
	}
	card, _ := os.ReadFile(filepath.Join(opt.Dir, "card.md"))
	if !strings.Contains(string(card), "INTERRUPTED") || !strings.Contains(string(card), "overlap/both-valid") {
		t.Errorf("the card of an interrupted hunt:\n%s", card)
	}
	// The reports index reads the hunt.json it wrote: one hunt, a failure.
	sum, err := pages.WriteIndex(opt.Dir)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := os.ReadFile(sum.Path)
	if sum.Hunts != 1 || sum.Failures != 1 || !strings.Contains(string(page), "INTERRUPTED; 1 violation: overlap/both-valid") ||
		!strings.Contains(string(page), "No run here outside the hunts above") {
		t.Errorf("index of the hunt's folder: %+v\n%s", sum, page)
	}

	// Within budget: Runs schedules at most.
	runs = 0
	opt.Runs = 3
	res, _ = Hunt(context.Background(), NewSpace(lockimpl.Info{Name: "x", Needs: lockimpl.NeedsSingle}, nil), fakeExec(func(*scenarios.Scenario) bool { return false }, &runs), opt)
	if len(res.Tried) != 3 || runs != 3 || len(res.Findings) != 0 {
		t.Errorf("a budget of 3 ran %d schedules (%d runs), %d findings", len(res.Tried), runs, len(res.Findings))
	}
}

// What the hunt reports of a result: a stale access only for a lock that
// claims fencing; a corruption alone, never beside an overlap; died and
// stuck; never unavailable or not-exercised.
func TestFingerprints(t *testing.T) {
	plain := lockimpl.Info{Name: "p", Needs: lockimpl.NeedsSingle}
	fenced := lockimpl.Info{Name: "f", Needs: lockimpl.NeedsSingle, Caps: []string{lockimpl.CapFencing}}
	f := func(class, kind string) checker.Finding { return checker.Finding{Class: class, Kind: kind} }
	paused := func(f checker.Finding) checker.Finding { f.Faults = []string{"pause-client(c1)"}; return f }
	ids := func(fps []Fingerprint) string {
		var out []string
		for _, fp := range fps {
			out = append(out, fp.ID())
		}
		return strings.Join(out, ",")
	}
	cases := []struct {
		info     lockimpl.Info
		findings []checker.Finding
		want     string
	}{
		{plain, []checker.Finding{paused(f("overlap", "stale-access")), f("corruption", "")}, ""},
		{fenced, []checker.Finding{paused(f("overlap", "stale-access")), f("corruption", "")}, "overlap/stale-access"},
		// No fault around it: the lease ran out under a live, unharmed
		// holder (a watchdog that did not renew), reported for any lock.
		{plain, []checker.Finding{f("overlap", "stale-access"), f("corruption", "")}, "overlap/stale-access"},
		{plain, []checker.Finding{f("overlap", "both-valid"), f("corruption", ""), f("overlap", "both-valid")}, "overlap/both-valid"},
		{plain, []checker.Finding{f("corruption", "")}, "corruption"},
		{plain, []checker.Finding{f("unavailable", ""), f("not-exercised", ""), f("fenced", "")}, ""},
		{plain, []checker.Finding{f("died", ""), f("stuck", ""), f("stale-extend", ""), f("fence-inversion", "")}, "died,stuck,stale-extend,fence-inversion"},
	}
	for i, c := range cases {
		if got := ids(Fingerprints(&checker.Result{Findings: c.findings}, c.info, time.Second)); got != c.want {
			t.Errorf("case %d: %q, want %q", i, got, c.want)
		}
	}
	// A fencing lock's lease granted again under a node clock jump: an
	// overlap only if the older holder touched the resource once the newer
	// grant existed (the false-alarm hunt of fenced, seed 1, schedule 7:
	// c1's next step, an extend, found its lock gone).
	jumped := checker.Finding{Class: "overlap", Kind: "both-valid", Leases: []string{"c1-16", "c2-18"}, From: 7046, To: 7644, Faults: []string{"clock-jump(primary)"}}
	holds := func(last int64) *checker.Result {
		return &checker.Result{Findings: []checker.Finding{jumped}, Holds: []checker.Hold{
			{Process: "c1", Lease: "c1-16", Fence: 2, Start: 7043, End: 7644, LastAccess: last, LastAccepted: last}, {Process: "c2", Lease: "c2-18", Fence: 3, Start: 7046, End: 9045}}}
	}
	// The newer holder's first access at first, the older holder's last
	// accepted one at accepted (the false-alarm hunt of fenced, docker,
	// seed 23: c1, stopped 300 ms in its section, wrote 100 ms after its
	// validity and before c2's first access; the resource took fence 2,
	// then c2's fence 3, in order).
	touched := func(accepted, first int64) *checker.Result {
		r := holds(7300)
		r.Holds[0].FirstAccess, r.Holds[0].LastAccepted = 7000, accepted
		r.Holds[1].FirstAccess, r.Holds[1].LastAccepted = first, first+100
		return r
	}
	sameToken := func(r *checker.Result) *checker.Result {
		r.Holds[1].Fence = r.Holds[0].Fence
		return r
	}
	reversed := func() *checker.Result {
		return &checker.Result{Findings: []checker.Finding{{Class: "overlap", Kind: "both-valid", Leases: []string{"c2-34", "c1-32"}, From: 2651240133416, To: 2651240216419,
			Faults: []string{"pause-client(c2)", "clock-jump(primary)", "pause-client(c1)"}}}, Holds: []checker.Hold{
			{Process: "c2", Lease: "c2-34", Fence: 10, Start: 2650838259518, End: 2651735914479, FirstAccess: 2650838803061, LastAccess: 2651735700861, LastAccepted: 2651735700861},
			{Process: "c1", Lease: "c1-32", Fence: 9, Start: 2651240133416, End: 2651240216419}}}
	}
	for _, c := range []struct {
		info lockimpl.Info
		res  *checker.Result
		want string
	}{
		{fenced, holds(0), ""},                              // untouched since the newer grant
		{fenced, holds(7000), ""},                           // its last access came before it
		{fenced, holds(7100), ""},                           // it wrote during the overlap, and the newer holder never accessed: nothing conflicted
		{plain, holds(0), "overlap/both-valid"},             // no fencing: the grants are the promise
		{fenced, touched(7300, 7400), ""},                   // every accepted access came before the newer holder's first
		{fenced, touched(7200, 7250), ""},                   // the one after it was refused
		{fenced, touched(7300, 7250), "overlap/both-valid"}, // accepted after the newer holder's first with a smaller token
		{fenced, touched(7300, 7300), "overlap/both-valid"}, // at the same instant: no order to trust
		{plain, touched(7300, 7400), "overlap/both-valid"},
		{fenced, sameToken(touched(7300, 7250)), "overlap/both-valid"}, // the same token for both: the resource cannot tell them apart
		{fenced, sameToken(touched(7200, 7250)), ""},                   // one after the other: an order the resource could keep
		{fenced, sameToken(holds(0)), ""},
		// The tokens the other way round (the false-alarm hunt of fenced,
		// seed 5, schedule 9: c1, stopped 900 ms after its acquire's reply
		// with fence 9, was granted after c2's fence 10 by the history's
		// account, and released without touching the resource).
		{fenced, reversed(), ""},
	} {
		if got := ids(Fingerprints(c.res, c.info, time.Second)); got != c.want {
			t.Errorf("%s, last access %d, last accepted %d, newer's first %d: %q, want %q", c.info.Name, c.res.Holds[0].LastAccess,
				c.res.Holds[0].LastAccepted, c.res.Holds[1].FirstAccess, got, c.want)
		}
	}
	// Nobody granted while the nodes were down: stuck only if the lock
	// stays so for longer than the slack once the faults are over (seed 3's
	// schedule 96 of broken-extend-from-end: a restart of a paused node
	// that ended 4 s after it began, and a grant 150 ms later).
	const s = int64(time.Second)
	stuck := checker.Finding{Class: "stuck", From: 3978 * s / 1000, To: 9097 * s / 1000}
	down := []checker.Window{{Fault: "pause-node", Start: 3979 * s / 1000, End: 5580 * s / 1000}, {Fault: "restart", Start: 4880 * s / 1000, End: 8947 * s / 1000}}
	for _, c := range []struct {
		faults []checker.Window
		to     int64
		want   string
	}{
		{down, stuck.To, ""},          // back 150 ms after the restart ended
		{down, 13 * s, "stuck"},       // still stuck 4 s after (more than 2 TTL + 1 s)
		{nil, stuck.To, "stuck"},      // no fault at all
		{down[:1], stuck.To, "stuck"}, // the pause ended 3.5 s before
		{[]checker.Window{{Fault: "kill", Start: 4 * s}}, stuck.To, ""}, // a node still down
	} {
		f := stuck
		f.To = c.to
		if got := ids(Fingerprints(&checker.Result{Findings: []checker.Finding{f}, Faults: c.faults}, plain, time.Second)); got != c.want {
			t.Errorf("stuck until %v with faults %v: %q, want %q", time.Duration(c.to), c.faults, got, c.want)
		}
	}
	// Stuck 4 s after the faults (the slack is 3 s with a 1 s TTL), but
	// the harness's own path stalled for part of that with no fault on: a
	// violation if the rest is still over the slack, else inconclusive
	// (Unjudged says why), never held.
	for _, c := range []struct {
		stalls    []checker.Window
		want, why string
	}{
		{nil, "stuck", ""},
		{[]checker.Window{{Start: 9500 * s / 1000, End: 10 * s}}, "stuck", ""},
		{[]checker.Window{{Start: 9500 * s / 1000, End: 10500 * s / 1000}, {Start: 10200 * s / 1000, End: 11 * s}}, "", "harness's own stalls"},
		{[]checker.Window{{Start: 4 * s, End: 6 * s}}, "stuck", ""}, // before the faults ended
	} {
		f := stuck
		f.To = 12947 * s / 1000
		r := &checker.Result{Findings: []checker.Finding{f}, Faults: down, Stalls: c.stalls}
		if got := ids(Fingerprints(r, plain, time.Second)); got != c.want {
			t.Errorf("stuck 4 s after the faults, stalls %v: %q, want %q", c.stalls, got, c.want)
		}
		if got := Unjudged(r, plain, time.Second); !strings.Contains(got, c.why) || (c.why == "") != (got == "") {
			t.Errorf("stuck 4 s after the faults, stalls %v: unjudged %q, want it to say %q", c.stalls, got, c.why)
		}
	}
	// A run that observed unknown proved nothing, whatever else it
	// observed that is not a violation.
	if got := Unjudged(&checker.Result{Observed: []string{checker.ClassUnavailable, checker.ClassUnknown}, Reason: "cycle 1 proved nothing"}, plain, time.Second); got != "cycle 1 proved nothing" {
		t.Errorf("unavailable and unknown: unjudged %q, want the checker's reason", got)
	}
	if got := Unjudged(&checker.Result{Observed: []string{checker.ClassUnavailable}}, plain, time.Second); got != "" {
		t.Errorf("unavailable alone: unjudged %q, want nothing", got)
	}
	// etcd keeps a lease at least 2 s and extends it by an election timeout
	// when it restarts: the false-alarm campaign's etcd seed 8 (TTL 1 s),
	// whose holder's release and revoke failed while etcd was down, was
	// granted again 5.0 s after etcd came back. Stuck on Redis, not on etcd;
	// on etcd too once that bound has passed twice and a second more.
	etcd := lockimpl.Info{Name: "etcd", Needs: lockfault.NeedsEtcd}
	restarted := []checker.Window{{Fault: "kill", Start: 0, End: 1526 * s / 1000}}
	for _, c := range []struct {
		info lockimpl.Info
		to   int64
		want string
	}{
		{plain, 6530 * s / 1000, "stuck"},
		{etcd, 6530 * s / 1000, ""},
		{etcd, 9 * s, "stuck"},
	} {
		f := checker.Finding{Class: "stuck", From: 300 * s / 1000, To: c.to}
		if got := ids(Fingerprints(&checker.Result{Findings: []checker.Finding{f}, Faults: restarted}, c.info, time.Second)); got != c.want {
			t.Errorf("%s, no grant until %v: %q, want %q", c.info.Name, time.Duration(c.to), got, c.want)
		}
	}
	noFault := holds(0)
	noFault.Findings[0].Faults = nil
	if got := ids(Fingerprints(noFault, fenced, time.Second)); got != "overlap/both-valid" {
		t.Errorf("a fencing lock's overlap with no fault around it: %q, want it reported", got)
	}
}

// A partition of one client's links weakens to latency on the same links
// (weakened to latency on every client's links, the holder's partition of
// broken-swallow-extend-error reproduced in 9 of 20 runs).
func TestWeakenKeepsTheLinks(t *testing.T) {
	e := Event{Fault: "partition-client", Target: "primary", Dur: 900 * time.Millisecond, Params: map[string]string{"clients": "holder", "mode": "reset"}}
	if w := weaken(e, "latency", time.Second); w.Params["clients"] != "holder" || w.Target != "primary" || w.Dur != e.Dur {
		t.Fatalf("weakened to %v; want latency on the holder's links to the primary for %v", w, e.Dur)
	}
	e.Params = nil
	if w := weaken(e, "latency", time.Second); w.Params["clients"] != "all" {
		t.Fatalf("weakened to %v; want latency on every client's links", w)
	}
}

// An anchored cycle whose faults were all dropped still holds what its
// anchor matched until its next step: the schedule says so, never "no
// fault" (broken-no-ttl's minimal scenario, "no fault", held the release's
// GET reply for 2 s).
func TestAnchorHoldIsAFault(t *testing.T) {
	s := &Schedule{TTL: time.Second, Anchor: &scenarios.CommandMatch{Name: "GET", Op: scenarios.OpRelease, At: scenarios.AtReply}}
	if got, want := strings.Join(s.Faults(), "; "), "after command "+s.Anchor.String()+": the reply held 2s"; got != want {
		t.Fatalf("faults %q, want %q", got, want)
	}
	s.Events = []Event{{Fault: "pause-node", Target: "primary", At: 200 * time.Millisecond, Dur: time.Second}}
	if got := s.Faults(); len(got) != 2 || !strings.HasSuffix(got[0], ": the reply held 200ms") {
		t.Fatalf("faults %q, want the reply held 200ms, then the pause", got)
	}
	s.Events[0].At = 0
	if got := s.Faults(); len(got) != 1 || strings.Contains(got[0], "held") {
		t.Fatalf("faults %q, want the pause alone (injected at the anchor)", got)
	}
}

// A hunt of a lock on etcd is judged on grants: the hunt sees the commands
// of Redis locks through RESP taps, and etcd's gRPC must not go through
// them (it did, and every call timed out: the false-alarm campaign's etcd
// cells reported "stuck" with no fault, the lock having granted nothing).
// The fault-free first schedule grants, and finds nothing.
func TestHuntOfEtcdGrants(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	ctx := context.Background()
	subj, err := runner.BuiltIn(ctx, "etcd")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(ctx, subj, Options{Seed: 21, Runs: 1, NoShrink: true, RateRuns: 1, Dir: t.TempDir(), Run: runner.Options{Backend: "process"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tried) != 1 || res.Inconclusive != 0 || len(res.Findings) != 0 {
		t.Fatalf("etcd's fault-free schedule: %d tried, %d inconclusive, findings %v; want one, judged, nothing found", len(res.Tried), res.Inconclusive, res.Findings)
	}
}

// A script's EVAL and EVALSHA are one shape: an anchor drawn on it fires
// on the EVALSHA a client sends once the node has the script (an anchor on
// EVAL alone waited for a call that came once per node).
func TestLearnJoinsAScriptsForms(t *testing.T) {
	sp := NewSpace(lockimpl.Info{Name: "x", Needs: lockimpl.NeedsSingle}, nil)
	sp.learn([]resp.Shape{
		{Client: "c1", Name: "EVALSHA", SHA: "ab", Key: "lock:*", Op: "acquire"},
		{Client: "c1", Name: "EVAL", SHA: "ab", Key: "lock:*", Op: "acquire"},
		{Client: "c2", Name: "EVALSHA", SHA: "cd", Key: "lock:*", Op: "release"},
		{Client: "c2", Name: "GET", Key: "lock:*", Op: "release"},
	})
	want := []resp.Shape{
		{Name: "EVAL|EVALSHA", SHA: "ab", Key: "lock:*", Op: "acquire"},
		{Name: "EVAL|EVALSHA", SHA: "cd", Key: "lock:*", Op: "release"},
		{Name: "GET", Key: "lock:*", Op: "release"},
	}
	if !slices.Equal(sp.Commands, want) {
		t.Fatalf("learned %+v, want %+v", sp.Commands, want)
	}
	// The acquire sends one kind of command: no boundary inside it.
	if in := innerShapes(sp.Commands); slices.ContainsFunc(in, func(s resp.Shape) bool { return s.Op == "acquire" }) {
		t.Errorf("inner shapes %+v include the acquire's one script", in)
	}
	m := NewGenerator(sp, 1).anchor(sp.Commands[:1])
	if got := m.Names(); !slices.Equal(got, []string{"EVAL", "EVALSHA"}) {
		t.Errorf("an anchor on the acquire's script matches %v, want both forms", got)
	}
}

// A fencing lock's tokens must keep growing when its nodes restart with
// nothing on disk while the lock is free (broken-memory-fence counts them
// in a node's memory and was out of the hunt's reach): one schedule in ten
// of such a space restarts every node cold, and no other space draws it
// (so their draws are as before).
func TestGeneratorRestartsFencingLocksCold(t *testing.T) {
	ctx := context.Background()
	subj, err := runner.BuiltIn(ctx, "fenced")
	if err != nil {
		t.Fatal(err)
	}
	count := func(sp *Space) (int, *Schedule) {
		sp.Commands = sampleShapes()
		g := NewGenerator(sp, 1)
		n, last := 0, (*Schedule)(nil)
		for i := 0; i < 500; i++ {
			if s := g.Next(); s.WhileFree {
				n++
				last = s
			}
		}
		return n, last
	}
	n, s := count(NewSpace(subj.Info, []string{"failover"}))
	if n < 25 || n > 80 {
		t.Fatalf("%d of 500 schedules of a fencing lock restart its nodes cold; want about one in ten", n)
	}
	if s.Topology.Persistence != "none" || s.Anchor != nil || len(s.Events) != 1 || s.Events[0].Fault != "kill" || s.Events[0].Target != "all" {
		t.Fatalf("a cold restart: %+v", s)
	}
	sc := s.Compile(s.Name(), "fenced", []string{"safe"})
	var steps []string
	for _, st := range sc.Nemesis.Steps {
		steps = append(steps, st.String())
	}
	if got := strings.Join(steps[:4], "; "); !strings.HasPrefix(got, "quiesce; fault kill on all") || !strings.Contains(got, "; resume; await grant") {
		t.Errorf("a cold restart's cycle: %s", got)
	}
	data, err := sc.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := scenarios.Parse(s.Name()+".yaml", data)
	if err != nil {
		t.Fatalf("does not parse: %v\n%s", err, data)
	}
	if _, err := runner.Prepare(ctx, parsed, &subj, runner.Overrides{}); err != nil {
		t.Fatalf("refused: %v\n%s", err, data)
	}
	if !strings.HasPrefix(s.Faults()[0], "while the lock is free: kill(all)") {
		t.Errorf("described as %q", s.Faults()[0])
	}
	// Not for fenced as it ships (its promise table says node-restart), nor
	// for a lock without fencing.
	if n, _ := count(NewSpace(subj.Info, BuiltInLimits("fenced"))); n != 0 {
		t.Errorf("fenced with its known limits drew %d cold restarts", n)
	}
	if n, _ := count(NewSpace(lockimpl.Info{Name: "x", Needs: lockimpl.NeedsSingle, Caps: []string{lockimpl.CapExtend}}, nil)); n != 0 {
		t.Errorf("a lock without fencing drew %d cold restarts", n)
	}
}
