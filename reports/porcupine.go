package reports

import (
	"fmt"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/history"
)

// linearizeTimeout bounds the porcupine run that feeds the visualization.
const linearizeTimeout = 30 * time.Second

// writeLinearizability writes porcupine's visualization of the critical
// sections (one read-modify-write operation each), annotated with the fault
// windows, the holds of each client, the findings and the cycle starts, so
// the illegal linearization can be related to what the nemesis did.
func writeLinearizability(path string, events []history.Event, res *checker.Result) error {
	ops := checker.Sections(events)
	_, info := porcupine.CheckOperationsVerbose(checker.RMWModel, ops, linearizeTimeout)
	info.AddAnnotations(annotations(events, res))
	return porcupine.VisualizePath(checker.RMWModel, info, path)
}

// annotations are the rows porcupine draws under the clients' operations.
// Porcupine numbers clients 0, 1, ... (sorted names); the "holds cN" rows
// tell which number is which client.
func annotations(events []history.Event, res *checker.Result) []porcupine.Annotation {
	var out []porcupine.Annotation
	sp := runSpan(events, res)
	for _, c := range cycles(events) {
		out = append(out, porcupine.Annotation{Tag: "cycles", Start: c.t, Description: fmt.Sprintf("cycle %d", c.n)})
	}
	if res == nil {
		return out
	}
	for _, w := range res.Faults {
		end := sp.windowEnd(w)
		details := fmt.Sprintf("%s from %.3f s to %.3f s", faultName(w), sp.sec(w.Start), sp.sec(end))
		if w.End == 0 {
			details += " (never healed)"
		}
		out = append(out, porcupine.Annotation{
			Tag: "fault " + faultName(w), Start: w.Start, End: end,
			Description: faultName(w), Details: details, BackgroundColor: "#fde9a9",
		})
	}
	for _, h := range res.Holds {
		desc := h.Lease
		if h.Fence != 0 {
			desc += fmt.Sprintf(" (fence %d)", h.Fence)
		}
		out = append(out, porcupine.Annotation{
			Tag: "holds " + h.Process, Start: h.Start, End: h.End, Description: desc,
			Details:         fmt.Sprintf("%s held the lock from %.3f s to %.3f s (%s)", h.Process, sp.sec(h.Start), sp.sec(h.End), h.EndReason),
			BackgroundColor: "#cfe0f5",
		})
		if h.LastAccess > h.End {
			out = append(out, porcupine.Annotation{
				Tag: "holds " + h.Process, Start: h.End, End: h.LastAccess, Description: "stale",
				Details:         fmt.Sprintf("%s touched the resource %s after its hold ended", h.Process, dur(h.LastAccess-h.End)),
				BackgroundColor: "#f3d0d0",
			})
		}
	}
	for _, f := range res.Findings {
		bg := "#f4a5a5"
		if f.Class == checker.ClassFenced {
			bg = "#f9cf9a"
		}
		out = append(out, porcupine.Annotation{
			Tag: "finding " + f.Class, Start: f.From, End: f.To,
			Description: f.Class, Details: f.Detail, BackgroundColor: bg,
		})
	}
	return out
}
