package scenarios

import (
	"strings"
	"time"
)

// validateWorkload checks what every client runs: how many clients, the
// resource, and the shape of a round (reentry, quiesce, round, keys,
// extends, start_apart, hold_until_valid, write_if_valid), filling the
// defaults.
func (s *Scenario) validateWorkload() error {
	w := &s.Workload
	if w.Clients == 0 && s.lineOf("workload.clients") == 0 {
		return s.ErrAt("workload.clients", "missing; how many clients contend (allowed: 1 to %d)", MaxClients)
	}
	if w.Clients < 1 || w.Clients > MaxClients {
		return s.ErrAt("workload.clients", "want 1 to %d clients, got %d", MaxClients, w.Clients)
	}
	if w.Resource == "" {
		w.Resource = "order"
	}
	if err := s.checkText("workload.resource", w.Resource, MaxResourceLen); err != nil {
		return err
	}
	if strings.ContainsAny(w.Resource, " \t\n") {
		return s.ErrAt("workload.resource", "must not contain white space")
	}
	if w.Reentry < 0 || w.Reentry > MaxReentry {
		return s.ErrAt("workload.reentry", "want 0 to %d acquires per round, got %d", MaxReentry, w.Reentry)
	}
	if w.Reentry == 0 {
		w.Reentry = 1
	}
	switch w.Quiesce {
	case "":
		w.Quiesce = QuiesceWait
	case QuiesceWait, QuiesceCut:
	default:
		return s.ErrAt("workload.quiesce", "%q is not allowed (allowed: wait, cut)", w.Quiesce)
	}
	switch w.Round {
	case "":
		w.Round = RoundHarness
	case RoundHarness:
	case RoundWorker:
		if w.Reentry > 1 || w.Extends > 0 || w.ReleaseOld || w.HoldUntilValid > 0 || w.WriteIfValid > 0 {
			return s.ErrAt("workload.round", "worker runs plain rounds only (no reentry, extends, release_old, hold_until_valid, write_if_valid)")
		}
	default:
		return s.ErrAt("workload.round", "%q is not allowed (allowed: harness, worker)", w.Round)
	}
	if w.Keys < 0 || w.Keys > 64 {
		return s.ErrAt("workload.keys", "want 0 to 64 keys, got %d", w.Keys)
	}
	if w.Extends < 0 || w.Extends > 100 {
		return s.ErrAt("workload.extends", "want 0 to 100 extends per round, got %d", w.Extends)
	}
	if w.Extends > 0 && (w.ExtendEvery.D() <= 0 || w.ExtendEvery.D() > time.Hour) {
		return s.ErrAt("workload.extend_every", "want a duration between 1ms and 1h when extends > 0, got %v", w.ExtendEvery.D())
	}
	if w.Clients > 1 && time.Duration(w.Clients-1)*w.StartApart.D() > maxStartSpread {
		return s.ErrAt("workload.start_apart", "the last client would start %v after the first (allowed: (clients-1) × start_apart at most %v)",
			time.Duration(w.Clients-1)*w.StartApart.D(), maxStartSpread)
	}
	if w.HoldUntilValid.D() < 0 || w.HoldUntilValid.D() > time.Hour {
		return s.ErrAt("workload.hold_until_valid", "want 0 (off) to 1h, got %v", w.HoldUntilValid.D())
	}
	if w.WriteIfValid.D() < 0 || w.WriteIfValid.D() > time.Hour {
		return s.ErrAt("workload.write_if_valid", "want 0 (off) to 1h, got %v", w.WriteIfValid.D())
	}
	return nil
}
