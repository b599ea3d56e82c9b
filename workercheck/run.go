package workercheck

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Options tune a check of a worker.
type Options struct {
	// Lock is the lock name init sends; "" leaves it out, and the worker
	// declares its own (lockfault's built-in worker needs one).
	Lock string
	// LockOptions are init's options.
	LockOptions map[string]string
	// Only runs just the checks with these ids, or whose id starts with
	// one that ends in "/" ("rules/"); empty runs every check.
	Only []string
	// Stderr receives the workers' stderr (nil: discarded; a failure
	// shows the end of it all the same).
	Stderr io.Writer
}

// spec is one named check of the protocol.
type spec struct {
	ID string
	// Rule is the rule of docs/PROTOCOL.md it holds the worker to.
	Rule string
	// Servers: it runs the lock, against redis-server and the resource.
	Servers bool
	run     func(p *probe)
}

// Checks returns the ids of every check, in the order they run.
func Checks() []string {
	var out []string
	for _, c := range all() {
		out = append(out, c.ID)
	}
	return out
}

// selected reports whether a check is among the Only filters.
func (o Options) selected(id string) bool {
	if len(o.Only) == 0 {
		return true
	}
	for _, f := range o.Only {
		if f == id || strings.HasSuffix(f, "/") && strings.HasPrefix(id, f) {
			return true
		}
	}
	return false
}

// validate refuses options that name no check.
func (o Options) validate() error {
	ids := Checks()
	for _, f := range o.Only {
		ok := slices.Contains(ids, f)
		for _, id := range ids {
			ok = ok || strings.HasSuffix(f, "/") && strings.HasPrefix(id, f)
		}
		if !ok {
			return fmt.Errorf("-run: %q names no check (allowed: a check id or a prefix ending in /: %s)", f, strings.Join(ids, ", "))
		}
	}
	return nil
}

// Run checks the worker started by argv against every rule of
// docs/PROTOCOL.md and returns the report. Its error means the check
// could not be made at all: the worker cannot be started (exec fails), a
// server does not start, or ctx ended; the CLI exits 2 on it. Every
// process Run started is gone when it returns.
func Run(ctx context.Context, argv []string, opts Options) (rep *Report, err error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	e := &env{ctx: ctx, argv: argv, opts: opts, pool: map[string]*session{}}
	defer func() {
		for _, s := range e.pool {
			shutdownWithin(s, time.Second)
		}
		if e.srv != nil {
			if cerr := e.srv.close(); cerr != nil && err == nil {
				err = cerr
			}
		}
	}()
	// The resource serves from the start: the describe handshake names
	// it, so that its worker can be built later by endpoints. The Redis
	// servers start when a check first needs them.
	if e.srv, err = newServers(); err != nil {
		return nil, fmt.Errorf("worker-check: %w", err)
	}
	rep = &Report{Worker: argv}
	checks := all()
	// handshake/describe always runs: every other check needs what it
	// learns, and a worker that cannot be started is Run's error.
	described := false
	for i := range checks {
		c := &checks[i]
		if c.ID != idDescribe && !opts.selected(c.ID) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var res Result
		switch {
		case c.ID != idDescribe && !described:
			res = Result{ID: c.ID, Status: StatusSkip, Reason: "not run: " + idDescribe + " failed, so the worker's lock is unknown"}
		case c.Servers && (e.ready.Needs == "etcd" || e.ready.Needs == "cluster"):
			res = Result{ID: c.ID, Status: StatusSkip, Reason: "not run: the lock needs " + string(e.ready.Needs) + ", and worker-check starts only standalone redis-server nodes (needs single or masters)"}
		default:
			res, err = e.runCheck(c)
			if err != nil {
				return nil, err
			}
		}
		if c.ID == idDescribe {
			described = res.Status == StatusOK
			e.srv.needs = string(e.ready.Needs)
			rep.Lock, rep.Needs, rep.Caps, rep.Failpoints, rep.Version = e.ready.Lock, string(e.ready.Needs), e.ready.Caps, e.ready.Failpoints, e.ready.Version
			if !opts.selected(c.ID) && res.Status == StatusOK {
				continue
			}
		}
		rep.Results = append(rep.Results, res)
	}
	resolveOwners(rep.Results)
	rep.count()
	return rep, nil
}

// runCheck runs one check and turns how it ended into a result.
func (e *env) runCheck(c *spec) (res Result, err error) {
	p := &probe{env: e, check: c}
	res = Result{ID: c.ID, Status: StatusOK}
	start := time.Now()
	defer func() { res.Ms = time.Since(start).Milliseconds() }()
	func() {
		defer func() {
			switch x := recover().(type) {
			case nil:
			case *failure:
				res.Status, res.Reason, res.Rule, res.Sent, res.Got, res.Stderr = StatusFail, x.msg, x.rule, x.sent, x.got, x.stderr
				if x.owner != "" && x.owner != c.ID {
					res.Owner = x.owner
				}
				if res.Rule == "" {
					res.Rule = c.Rule
				}
			case *skipped:
				res.Status, res.Reason = StatusSkip, x.reason
			case runError:
				err = x
			default:
				panic(x)
			}
		}()
		c.run(p)
		p.settle()
	}()
	p.closeSessions(res.Status == StatusOK && err == nil)
	if res.Status == StatusOK {
		res.Reason = p.noteText()
	}
	if err == nil && e.ctx.Err() != nil {
		err = e.ctx.Err()
	}
	return res, err
}

// resolveOwners settles failures of set-up steps: a step that broke the
// rule of another check (its owner) is reported there. When the owner
// fails, the check that depended on the step is skipped with the reason;
// otherwise (the owner passed, or did not run) it fails itself.
func resolveOwners(rs []Result) {
	status := map[string]Status{}
	for _, r := range rs {
		status[r.ID] = r.Status
	}
	for i, r := range rs {
		if r.Status != StatusFail || r.Owner == "" {
			continue
		}
		if status[r.Owner] == StatusFail {
			rs[i] = Result{ID: r.ID, Status: StatusSkip, Owner: r.Owner,
				Reason: fmt.Sprintf("not run to the end: a set-up step broke the rule that %s checks, and %s fails (%s)", r.Owner, r.Owner, r.Reason)}
			continue
		}
		rs[i].Reason = fmt.Sprintf("in a set-up step (the subject of %s): %s", r.Owner, r.Reason)
	}
}
