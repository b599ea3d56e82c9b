package report

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/history"
)

// linearizeTimeout bounds the porcupine run that feeds the visualization.
const linearizeTimeout = 30 * time.Second

// Bounds of linearizability.html: it shows at most maxWindows stretches of
// critical sections with at most maxWindowOps sections in all, so any run's
// page opens quickly whatever the length of the run.
const (
	maxWindows   = 20
	maxWindowOps = 2000
	sampleOps    = 50
)

// window is one stretch of one key's critical sections shown in the page;
// porcupine checks each as a partition of its own, starting from the value
// the checker found at its start.
type window struct {
	seg checker.Segment
	ops []porcupine.Operation
	tag string
}

type visInput struct {
	checker.RMWInput
	Init checker.RMWState
}

type visState struct {
	S       checker.RMWState
	Started bool
}

var visModel = porcupine.Model{
	Partition: func(ops []porcupine.Operation) [][]porcupine.Operation {
		var parts [][]porcupine.Operation
		at := map[string]int{}
		for _, op := range ops {
			in := op.Input.(visInput)
			k := fmt.Sprintf("%s\x00%d", in.Key, op.Metadata.(int))
			i, ok := at[k]
			if !ok {
				i = len(parts)
				at[k] = i
				parts = append(parts, nil)
			}
			parts[i] = append(parts[i], op)
		}
		return parts
	},
	Init: func() any { return visState{} },
	Step: func(state, input, output any) (bool, any) {
		s, in := state.(visState), input.(visInput)
		if !s.Started {
			s = visState{S: in.Init, Started: true}
		}
		ok, next := checker.RMWModel.Step(s.S, in.RMWInput, output)
		return ok, visState{S: next.(checker.RMWState), Started: true}
	},
	DescribeOperation: func(input, output any) string {
		return checker.RMWModel.DescribeOperation(input.(visInput).RMWInput, output)
	},
	DescribeOperationMetadata: func(info any) string { return fmt.Sprintf("stretch %d", info.(int)+1) },
	DescribeState: func(state any) string {
		s := state.(visState)
		if !s.Started {
			return "(stretch start)"
		}
		return checker.RMWModel.DescribeState(s.S)
	},
}

// chooseWindows picks the stretches to draw: a short run whole; else the
// ones that are not linearizable first, then those porcupine had to search, up to the
// bounds; a run where no stretch needed a search shows its first few
// sections as a sample. Stretches whose check timed out are left out (the
// search would time out again).
func chooseWindows(byKey map[string][]porcupine.Operation, res *checker.Result) ([]window, string) {
	nops := 0
	for _, ops := range byKey {
		nops += len(ops)
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	nseg := 0
	if res != nil {
		nseg = res.SegmentCount
	}
	if nops <= maxWindowOps && len(keys) <= maxWindows {
		return wholeWindows(byKey, keys), fmt.Sprintf("%d critical sections in %d independent stretches over %d key(s); linearizable: %s. Shown: all of them",
			nops, nseg, len(byKey), linOf(res))
	}
	out, skipped := searchedWindows(byKey, res)
	if len(out) == 0 {
		out = sampleWindow(byKey, keys)
	}
	summary := fmt.Sprintf("%d critical sections in %d independent stretches over %d key(s); linearizable: %s. Shown: %d stretch(es)",
		nops, nseg, len(byKey), linOf(res), len(out))
	if len(out) == 1 && out[0].tag == "sample" {
		summary += fmt.Sprintf(" (a sample: the first %d sections; no stretch had sections in flight together)", len(out[0].ops))
	} else if len(out) > 0 {
		summary += " (those not linearizable first, then those with sections in flight together)"
	}
	if skipped > 0 {
		summary += fmt.Sprintf("; %d more not shown (page bounded to %d stretches, %d sections, and stretches whose check timed out are left out)", skipped, maxWindows, maxWindowOps)
	}
	return out, summary
}

// wholeWindows shows a short run whole: one stretch per key, from 0.
func wholeWindows(byKey map[string][]porcupine.Operation, keys []string) []window {
	var out []window
	for _, k := range keys {
		ops := byKey[k]
		if len(ops) == 0 {
			continue
		}
		to := ops[0].Return
		for _, op := range ops {
			to = max(to, op.Return)
		}
		out = append(out, window{seg: checker.Segment{Key: k, From: ops[0].Call, To: to, Ops: len(ops)}, ops: ops, tag: "whole"})
	}
	return out
}

// searchedWindows are the checker's stretches in its order (those not
// linearizable first), up to the bounds; skipped counts those left out.
func searchedWindows(byKey map[string][]porcupine.Operation, res *checker.Result) (out []window, skipped int) {
	if res == nil {
		return nil, 0
	}
	total := 0
	for _, s := range res.Segments {
		if s.Result == string(porcupine.Unknown) {
			skipped++
			continue
		}
		ops := byKey[s.Key]
		i := sort.Search(len(ops), func(i int) bool { return ops[i].Call >= s.From })
		j := i
		for j < len(ops) && ops[j].Call <= s.To {
			j++
		}
		if len(out) >= maxWindows || total+(j-i) > maxWindowOps || j == i {
			skipped++
			continue
		}
		out = append(out, window{seg: s, ops: ops[i:j], tag: s.Result})
		total += j - i
	}
	return out, skipped
}

// sampleWindow is the first sections of the first key, from value 0.
func sampleWindow(byKey map[string][]porcupine.Operation, keys []string) []window {
	if len(keys) == 0 {
		return nil
	}
	ops := byKey[keys[0]]
	cut := 0
	for _, c := range checker.Segments(ops) {
		if c[1] > sampleOps && cut > 0 {
			break
		}
		cut = c[1]
	}
	if cut == 0 {
		return nil
	}
	return []window{{seg: checker.Segment{Key: keys[0], From: ops[0].Call, To: ops[cut-1].Return, Ops: cut}, ops: ops[:cut], tag: "sample"}}
}

func linOf(res *checker.Result) string {
	if res == nil {
		return "not checked"
	}
	return res.Linearizable
}

// writeLinearizability writes porcupine's visualization of the stretches
// of critical sections that matter (one read-modify-write operation each),
// annotated with a summary and, within those stretches, the fault windows,
// the holds of each client, the findings and the cycle starts, so an
// illegal linearization can be related to what the nemesis did.
func writeLinearizability(path string, events []history.Event, res *checker.Result) error {
	byKey := checker.Sections(events)
	wins, summary := chooseWindows(byKey, res)
	var ops []porcupine.Operation
	for wi, w := range wins {
		init := checker.RMWState{V: w.seg.Init, Any: w.seg.AnyIn}
		for _, op := range w.ops {
			op.Input = visInput{RMWInput: op.Input.(checker.RMWInput), Init: init}
			op.Metadata = wi
			ops = append(ops, op)
		}
	}
	_, info := porcupine.CheckOperationsVerbose(visModel, ops, linearizeTimeout)
	info.AddAnnotations(annotations(events, res, wins, summary))
	return porcupine.VisualizePath(visModel, info, path)
}

// annotations are the rows porcupine draws under the clients' operations,
// limited to the shown stretches (with a little margin). Porcupine numbers
// clients 0, 1, ... (sorted names); the "holds cN" rows tell which number
// is which client.
func annotations(events []history.Event, res *checker.Result, wins []window, summary string) []porcupine.Annotation {
	var out []porcupine.Annotation
	sp := RunSpan(events, res)
	type iv struct{ a, b int64 }
	var shown []iv
	for _, w := range wins {
		m := (w.seg.To - w.seg.From) / 10
		shown = append(shown, iv{w.seg.From - m, w.seg.To + m})
	}
	visible := func(a, b int64) bool {
		for _, s := range shown {
			if a <= s.b && b >= s.a {
				return true
			}
		}
		return false
	}
	at := sp.t0
	if len(wins) > 0 {
		at = wins[0].seg.From
	}
	out = append(out, porcupine.Annotation{Tag: "summary", Start: at, Description: "summary", Details: summary, BackgroundColor: "#e8e8e8"})
	for i, w := range wins {
		desc := fmt.Sprintf("stretch %d", i+1)
		if w.seg.Key != "" {
			desc += " key " + w.seg.Key
		}
		out = append(out, porcupine.Annotation{Tag: "stretches", Start: w.seg.From, End: w.seg.To, Description: desc,
			Details: fmt.Sprintf("%s: %d sections from %.3f s to %.3f s, starting from value %s (%s)", desc, len(w.ops), sp.Sec(w.seg.From), sp.Sec(w.seg.To), initOf(w.seg), w.tag)})
	}
	for _, c := range Cycles(events) {
		if visible(c.T, c.T) {
			out = append(out, porcupine.Annotation{Tag: "cycles", Start: c.T, Description: fmt.Sprintf("cycle %d", c.N)})
		}
	}
	if res == nil {
		return out
	}
	return append(out, resultAnnotations(res, sp, visible)...)
}

// resultAnnotations are the checker's fault windows, holds (with the
// resource accesses after a hold ended) and findings that fall in a shown
// stretch.
func resultAnnotations(res *checker.Result, sp Span, visible func(a, b int64) bool) []porcupine.Annotation {
	var out []porcupine.Annotation
	for _, w := range res.Faults {
		end := sp.WindowEnd(w)
		if !visible(w.Start, end) {
			continue
		}
		details := fmt.Sprintf("%s from %.3f s to %.3f s", FaultName(w), sp.Sec(w.Start), sp.Sec(end))
		if w.End == 0 {
			details += " (never healed)"
		}
		out = append(out, porcupine.Annotation{
			Tag: "fault " + FaultName(w), Start: w.Start, End: end,
			Description: FaultName(w), Details: details, BackgroundColor: "#fde9a9",
		})
	}
	for _, h := range res.Holds {
		if !visible(h.Start, h.EffectiveEnd()) {
			continue
		}
		desc := h.Lease
		if h.Fence != 0 {
			desc += fmt.Sprintf(" (fence %d)", h.Fence)
		}
		tag := "holds " + h.Process
		if h.Key != "" {
			tag += " " + h.Key
		}
		out = append(out, porcupine.Annotation{
			Tag: tag, Start: h.Start, End: h.End, Description: desc,
			Details:         fmt.Sprintf("%s held the lock%s from %.3f s to %.3f s (%s)", h.Process, onKey(h.Key), sp.Sec(h.Start), sp.Sec(h.End), h.EndReason),
			BackgroundColor: "#cfe0f5",
		})
		if h.LastAccess > h.End {
			out = append(out, porcupine.Annotation{
				Tag: tag, Start: h.End, End: h.LastAccess, Description: "stale",
				Details:         fmt.Sprintf("%s touched the resource %s after its hold ended", h.Process, Dur(h.LastAccess-h.End)),
				BackgroundColor: "#f3d0d0",
			})
		}
	}
	for _, f := range res.Findings {
		if !visible(f.From, f.To) {
			continue
		}
		bg := "#f4a5a5"
		if f.Class == checker.ClassFenced {
			bg = "#f9cf9a"
		}
		out = append(out, porcupine.Annotation{
			Tag: "finding " + f.Class, Start: f.From, End: f.To,
			Description: strings.TrimSpace(f.Class + " " + f.Key), Details: f.Detail, BackgroundColor: bg,
		})
	}
	return out
}

func initOf(s checker.Segment) string {
	if s.AnyIn {
		return "unknown"
	}
	return fmt.Sprint(s.Init)
}

func onKey(k string) string {
	if k == "" {
		return ""
	}
	return fmt.Sprintf(" on key %q", k)
}
