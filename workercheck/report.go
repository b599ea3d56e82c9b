package workercheck

import (
	"fmt"
	"strings"
)

// Status is a check's outcome.
type Status string

// Check outcomes. A check that cannot apply to the worker (a capability it
// does not claim, a command it says it does not support where that is
// allowed) is skipped with the reason, never passed.
const (
	StatusOK   Status = "ok"
	StatusFail Status = "FAIL"
	StatusSkip Status = "skip"
)

// Line is one line of the conversation: stdin (sent to the worker) or
// stdout (written by it), with its 1-based number on that stream and its
// text, truncated to maxShown bytes.
type Line struct {
	Stream string `json:"stream"`
	N      int    `json:"n"`
	Text   string `json:"text"`
}

func (l Line) String() string { return fmt.Sprintf("%s:%d %s", l.Stream, l.N, l.Text) }

// maxShown bounds the text of a line in a report.
const maxShown = 200

// shown truncates a line's text for a report.
func shown(b []byte) string {
	if len(b) <= maxShown {
		return string(b)
	}
	return fmt.Sprintf("%s... (%d bytes)", b[:maxShown], len(b))
}

// Result is one check's outcome.
type Result struct {
	ID     string `json:"id"`
	Status Status `json:"status"`
	// Reason says why a check failed or was skipped, or what an ok check
	// could not verify.
	Reason string `json:"reason,omitempty"`
	// Rule is the rule of docs/PROTOCOL.md a failure breaks.
	Rule string `json:"rule,omitempty"`
	// Sent are the lines the failure is about (the worker's stdin); Got
	// is the worker's line that broke the rule, if one did.
	Sent []Line `json:"sent,omitempty"`
	Got  *Line  `json:"got,omitempty"`
	// Owner is the check whose rule a set-up step of this check broke
	// (the step is that check's subject). This check is skipped when the
	// owner fails, and fails itself otherwise.
	Owner string `json:"owner,omitempty"`
	// Stderr is the end of the worker's stderr, for a failure.
	Stderr string `json:"stderr,omitempty"`
	// Ms is how long the check took, in milliseconds.
	Ms int64 `json:"ms"`
}

// Report is the outcome of a whole check of one worker.
type Report struct {
	Worker     []string `json:"worker"` // the command
	Lock       string   `json:"lock,omitempty"`
	Needs      string   `json:"needs,omitempty"`
	Caps       []string `json:"caps,omitempty"`
	Failpoints []string `json:"failpoints,omitempty"`
	Version    string   `json:"version,omitempty"`
	Results    []Result `json:"checks"`
	Passed     int      `json:"passed"`
	Failed     int      `json:"failed"`
	Skipped    int      `json:"skipped"`
}

// Result returns the result of the check with this id.
func (r *Report) Result(id string) (Result, bool) {
	for _, x := range r.Results {
		if x.ID == id {
			return x, true
		}
	}
	return Result{}, false
}

// ExitCode is the CLI's exit status for the report: 0 when no check
// failed, 1 otherwise. (A worker that cannot be started at all is Run's
// error: exit status 2.)
func (r *Report) ExitCode() int {
	if r.Failed > 0 {
		return 1
	}
	return 0
}

// Text renders the report for a person: a header naming the worker and
// its lock, one line per check (ok / FAIL / skip and the reason), and the
// totals.
func (r *Report) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "worker-check %s\n", strings.Join(r.Worker, " "))
	if r.Lock != "" {
		fmt.Fprintf(&b, "lock %s, needs %s, caps [%s], failpoints [%s]", r.Lock, r.Needs, strings.Join(r.Caps, " "), strings.Join(r.Failpoints, " "))
		if r.Version != "" {
			fmt.Fprintf(&b, ", version %q", r.Version)
		}
		b.WriteString("\n")
	}
	for _, x := range r.Results {
		fmt.Fprintf(&b, "%-4s %s", x.Status, x.ID)
		if x.Reason != "" {
			fmt.Fprintf(&b, ": %s", x.Reason)
		}
		if x.Status == StatusFail {
			for _, l := range x.Sent {
				fmt.Fprintf(&b, "\n       sent %s", l)
			}
			if x.Got != nil {
				fmt.Fprintf(&b, "\n       got  %s", *x.Got)
			}
			if x.Rule != "" {
				fmt.Fprintf(&b, "\n       rule %s", x.Rule)
			}
			if x.Stderr != "" {
				fmt.Fprintf(&b, "\n       stderr ends %q", x.Stderr)
			}
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "%d ok, %d FAIL, %d skip\n", r.Passed, r.Failed, r.Skipped)
	return b.String()
}

// count fills the totals.
func (r *Report) count() {
	r.Passed, r.Failed, r.Skipped = 0, 0, 0
	for _, x := range r.Results {
		switch x.Status {
		case StatusOK:
			r.Passed++
		case StatusFail:
			r.Failed++
		default:
			r.Skipped++
		}
	}
}
