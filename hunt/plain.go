package hunt

import (
	"strings"

	"github.com/lockfault/lockfault/resp"
	"github.com/lockfault/lockfault/scenarios"
)

// The plain generator: the learning search's fresh draws (-search learn).
// It draws every list of docs/HUNT.md's generator table uniformly, without
// the tuned special cases of the random search (first-fault weights, the
// anchors' shares, pauses into the next hold or before the validity is
// dated, aimed clock steps, workloads fitted to the faults): the corpus
// and its mutations (mutate.go) reach those situations from what the runs
// covered. Two structural rules stay: a client fault at a command anchor
// hits the client whose command fired, and a crashed client is restarted.
// So do the cold restarts of a fencing lock's nodes (coldRestart), the one
// way to reach a fencing counter kept in a node's memory.

// NewPlainGenerator is the generator of a seed without tuned special cases.
func NewPlainGenerator(sp *Space, seed int64) *Generator {
	g := NewGenerator(sp, seed)
	g.plain = true
	return g
}

// tuned is the tuned share, or the plain one for a plain generator.
func (g *Generator) tuned(tunedP, plainP float64) float64 {
	if g.plain {
		return plainP
	}
	return tunedP
}

// plainAnchor draws a command anchor uniformly: an operation the workload
// performs, one of its commands, at any of the three points, any reply or
// a successful one. The operation first: an operation that sends one
// command (an extend's script) is as likely as one that sends three.
func (g *Generator) plainAnchor(shapes []resp.Shape) *scenarios.CommandMatch {
	op := g.of(opsOf(shapes))
	var of []resp.Shape
	for _, c := range shapes {
		if c.Op == op {
			of = append(of, c)
		}
	}
	sh := of[g.rng.IntN(len(of))]
	m := &scenarios.CommandMatch{Name: strings.Fields(sh.Name)[0], Op: sh.Op, At: g.of([]string{scenarios.AtRequest, scenarios.AtReply, scenarios.AtAfterReply})}
	if m.At != scenarios.AtRequest {
		m.Reply = g.of([]string{scenarios.ReplyAny, scenarios.ReplyOK})
	}
	return m
}
