package builtin

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/lockfault/lockfault/campaign"
	"github.com/lockfault/lockfault/card"
	"github.com/lockfault/lockfault/runner"
	"github.com/lockfault/lockfault/suite"
)

// Executor runs a campaign's runs for real: a property as `simulate suite`
// runs it, a scenario as `simulate run`, a hunt seed as `simulate hunt`
// (Hunt, when set). Subjects are resolved once each.
type Executor struct {
	// Options say where and how every run goes (its ReportsDir is replaced by
	// each run's own folder).
	Options runner.Options
	// Cycles overrides every item's cycles (0: their own); Short halves
	// them.
	Cycles int
	Short  bool
	// Hunt runs one hunt seed against a subject, given the campaign
	// subject's known limits (a worker's `known:`; a built-in lock's come
	// from its promise table inside the hunt). Nil: hunt items are a
	// harness error.
	Hunt func(ctx context.Context, subj runner.Subject, known []string, seed int64, search, dir string) campaign.Result

	mu       sync.Mutex
	subjects map[string]subjectOrErr
}

type subjectOrErr struct {
	s   runner.Subject
	err error
}

// subject resolves a campaign subject once.
func (e *Executor) subject(ctx context.Context, s campaign.Subject) (runner.Subject, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.subjects == nil {
		e.subjects = map[string]subjectOrErr{}
	}
	if r, ok := e.subjects[s.Key()]; ok {
		return r.s, r.err
	}
	subj, err := runner.Resolve(ctx, s.Lock, s.Worker)
	if err == nil || ctx.Err() == nil {
		e.subjects[s.Key()] = subjectOrErr{subj, err}
	}
	return subj, err
}

// Run makes one run real.
func (e *Executor) Run(ctx context.Context, spec campaign.RunSpec) campaign.Result {
	started := time.Now()
	res := campaign.Result{Subject: campaign.RunSubject{Lock: spec.Subject.Lock, Worker: spec.Subject.Worker}}
	subj, err := e.subject(ctx, spec.Subject)
	if err != nil {
		res.Outcome, res.Finding = campaign.HarnessError, err.Error()
		return res
	}
	res.Subject.Lock, res.Subject.LibraryVersion = subj.Label(), subj.Info.Version
	switch spec.Item.Kind {
	case campaign.KindProperty:
		e.property(ctx, spec, subj, &res)
	case campaign.KindScenario:
		e.scenario(ctx, spec, subj, &res)
	case campaign.KindHunt:
		if e.Hunt == nil {
			res.Outcome, res.Finding = campaign.HarnessError, "hunt items need the hunt (simulate campaign runs them)"
			break
		}
		r := e.Hunt(ctx, subj, spec.Subject.Known, spec.Item.Seed(), spec.Item.Search, spec.Dir)
		r.Subject = res.Subject
		res = r
	default:
		res.Outcome, res.Finding = campaign.HarnessError, fmt.Sprintf("unknown item kind %q", spec.Item.Kind)
	}
	res.Wall = time.Since(started)
	return res
}

func (e *Executor) property(ctx context.Context, spec campaign.RunSpec, subj runner.Subject, res *campaign.Result) {
	p, ok := suite.Lookup(spec.Item.Name)
	if !ok {
		res.Outcome, res.Finding = campaign.HarnessError, fmt.Sprintf("no property %q", spec.Item.Name)
		return
	}
	if ok, why := p.AppliesTo(subj); !ok {
		res.Outcome, res.Finding = campaign.NotClaimed, why
		return
	}
	o := suite.Options{Run: e.Options, Cycles: e.Cycles, Short: e.Short}
	o.Run.ReportsDir = spec.Dir
	pctx, cancel := context.WithTimeout(ctx, suite.Timeout)
	defer cancel()
	row := suite.RunProperty(pctx, p, subj, o)
	res.Outcome, res.Observed, res.Finding, res.Report = campaign.Outcome(row.Outcome), row.Observed, row.Finding, row.Report
	if row.Outcome == card.Unknown {
		res.Outcome = campaign.Unknown
	}
}

func (e *Executor) scenario(ctx context.Context, spec campaign.RunSpec, subj runner.Subject, res *campaign.Result) {
	name := spec.Item.Name
	if spec.Item.Path != "" {
		name = spec.Item.Path
	}
	sc, err := runner.Load(name)
	if err == nil {
		var plan *runner.Plan
		if plan, err = runner.Prepare(ctx, sc, &subj, runner.Overrides{Cycles: e.Cycles}); err == nil {
			o := e.Options
			o.ReportsDir = spec.Dir
			var out *runner.Outcome
			out, err = runner.Run(ctx, plan, o)
			if out != nil {
				res.Report, res.Observed = filepath.Join(out.Dir, "report.md"), out.Result.Observed
				switch runner.Code(out, err) {
				case runner.ExitMatch:
					res.Outcome = campaign.Matched
				case runner.ExitNoMatch:
					res.Outcome, res.Finding = campaign.NoMatch, oneLine(out.Meta.Why)
				default:
					res.Outcome, res.Finding = campaign.HarnessError, oneLine(out.Meta.Why)
					if runner.Unjudged(out) && out.Meta.Error == "" {
						res.Outcome, res.Finding = campaign.Unknown, oneLine(out.Result.Reason)
					}
				}
				return
			}
		}
	}
	res.Outcome, res.Finding = campaign.HarnessError, oneLine(err.Error())
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
