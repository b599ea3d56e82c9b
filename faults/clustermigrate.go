package faults

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/cluster"
)

func init() {
	Register(Info{Name: "cluster-migrate-slot", Targets: TargetsNode, Params: []string{"step", "to", "within"}, Topologies: []lockfault.TopologyKind{lockfault.Cluster},
		Description: "a migration of the lock key's slot from the target master (key-master) to another master (to=<node>, default the next master by name), as redis-cli --cluster reshard does it, in steps a schedule can stop between: step=begin (CLUSTER SETSLOT IMPORTING on the destination, then MIGRATING on the source: from then on the source answers ASK for a key it no longer has), move (MIGRATE every key of the slot to the destination through its announced proxy), finish (any key left is moved, then SETSLOT NODE on the destination, the source and every other master; the step ends once every node names the destination as the slot's owner, within=<duration>, default 30s), or all (the three at once, the default). The steps of one migration name the same source (key-master stays the source until finish). Heal of begin or move finishes a migration left half done"}, clusterMigrate{})
}

// clusterMigrate moves the lock key's slot between masters. Each step is
// one injection, so a schedule can put awaits (a grant, a command held at
// the taps) between them.
type clusterMigrate struct{}

var migrateSteps = []string{"begin", "move", "finish", "all"}

func migrateStep(p Params) (string, error) {
	s := p["step"]
	if s == "" {
		return "all", nil
	}
	if !slices.Contains(migrateSteps, s) {
		return "", paramErr("step", "%q is not allowed (allowed: %s)", s, strings.Join(migrateSteps, ", "))
	}
	return s, nil
}

func (clusterMigrate) Validate(p Params) error {
	if _, err := migrateStep(p); err != nil {
		return err
	}
	if to, ok := p["to"]; ok && !validNodeName(to) {
		return paramErr("to", "%q is not a node name (allowed: n1, n2, ...)", to)
	}
	_, err := clusterWithin.duration(p)
	return err
}

// validNodeName: n followed by digits.
func validNodeName(s string) bool {
	if len(s) < 2 || s[0] != 'n' {
		return false
	}
	for _, r := range s[1:] {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func (clusterMigrate) injectTime(p Params) time.Duration {
	d, _ := clusterWithin.duration(p)
	return d
}

// migration is one migration's parties, as a step finds them.
type migration struct {
	c              *cluster.Cluster
	slot           int
	src, dst       *cluster.Member
	srcID, dstID   string
	dstHost, dstPt string // the destination's announced address (its peer proxy)
}

// planMigration resolves a step's source (the target, a master serving the
// lock key's slot) and destination.
func planMigration(ctx context.Context, env Env, target string, p Params) (*migration, error) {
	src, err := oneClusterNode(env, target, cluster.RoleMaster)
	if err != nil {
		return nil, err
	}
	c := env.Cluster()
	if c.LockKey == "" {
		return nil, fmt.Errorf("cluster-migrate-slot: the run has no lock key")
	}
	m := &migration{c: c, slot: cluster.KeySlot(c.LockKey), src: src}
	masters := c.WithRole(cluster.RoleMaster)
	if to := p["to"]; to != "" {
		m.dst = c.Member(to)
		if m.dst == nil || m.dst.Role != cluster.RoleMaster || m.dst == src {
			return nil, fmt.Errorf("cluster-migrate-slot: to=%s is not a master other than %s (masters: %v)", to, src.Name, memberNames(masters))
		}
	} else {
		// The next master by name after the source, wrapping.
		i := slices.Index(masters, src)
		if i < 0 || len(masters) < 2 {
			return nil, fmt.Errorf("cluster-migrate-slot: no other master than %s", src.Name)
		}
		m.dst = masters[(i+1)%len(masters)]
	}
	if m.srcID, err = nodeID(ctx, c, m.src); err != nil {
		return nil, err
	}
	if m.dstID, err = nodeID(ctx, c, m.dst); err != nil {
		return nil, err
	}
	addr, err := c.Announced(m.dst)
	if err != nil {
		return nil, err
	}
	m.dstHost, m.dstPt, _ = net.SplitHostPort(addr)
	return m, nil
}

func memberNames(ms []*cluster.Member) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}

func nodeID(ctx context.Context, c *cluster.Cluster, m *cluster.Member) (string, error) {
	v, err := c.Do(ctx, m, "CLUSTER", "MYID")
	if err != nil {
		return "", fmt.Errorf("CLUSTER MYID on %s: %w", m.Name, err)
	}
	s, _ := v.(string)
	return s, nil
}

// begin marks the slot importing on the destination, then migrating on
// the source (the order redis-cli uses: a client sent ASK by the source
// finds the destination ready).
func (m *migration) begin(ctx context.Context) error {
	if _, err := m.c.Do(ctx, m.dst, "CLUSTER", "SETSLOT", m.slot, "IMPORTING", m.srcID); err != nil {
		return fmt.Errorf("SETSLOT %d IMPORTING on %s: %w", m.slot, m.dst.Name, err)
	}
	if _, err := m.c.Do(ctx, m.src, "CLUSTER", "SETSLOT", m.slot, "MIGRATING", m.dstID); err != nil {
		return fmt.Errorf("SETSLOT %d MIGRATING on %s: %w", m.slot, m.src.Name, err)
	}
	return nil
}

// move MIGRATEs every key of the slot from the source to the destination,
// a batch at a time, and returns the keys moved.
func (m *migration) move(ctx context.Context) ([]string, error) {
	var moved []string
	for round := 0; round < 100; round++ {
		v, err := m.c.Do(ctx, m.src, "CLUSTER", "GETKEYSINSLOT", m.slot, 100)
		if err != nil {
			return moved, fmt.Errorf("GETKEYSINSLOT %d on %s: %w", m.slot, m.src.Name, err)
		}
		ks, _ := v.([]any)
		if len(ks) == 0 {
			return moved, nil
		}
		args := []any{"MIGRATE", m.dstHost, m.dstPt, "", 0, 5000}
		if pw := m.c.Topology.Password; pw != "" {
			args = append(args, "AUTH", pw)
		}
		args = append(args, "KEYS")
		for _, k := range ks {
			args = append(args, k)
			moved = append(moved, fmt.Sprint(k))
		}
		if _, err := m.c.Do(ctx, m.src, args...); err != nil {
			return moved, fmt.Errorf("MIGRATE of slot %d from %s to %s: %w", m.slot, m.src.Name, m.dst.Name, err)
		}
	}
	return moved, fmt.Errorf("slot %d on %s still has keys after 100 MIGRATE rounds", m.slot, m.src.Name)
}

// finish moves what is left, gives the slot to the destination on the
// destination, the source and every other master, and waits until every
// node agrees.
func (m *migration) finish(ctx context.Context, within time.Duration) ([]string, error) {
	moved, err := m.move(ctx)
	if err != nil {
		return moved, err
	}
	order := []*cluster.Member{m.dst, m.src}
	for _, x := range m.c.WithRole(cluster.RoleMaster) {
		if x != m.dst && x != m.src && x.Node.Running() {
			order = append(order, x)
		}
	}
	for _, x := range order {
		if _, err := m.c.Do(ctx, x, "CLUSTER", "SETSLOT", m.slot, "NODE", m.dstID); err != nil {
			return moved, fmt.Errorf("SETSLOT %d NODE %s on %s: %w", m.slot, m.dst.Name, x.Name, err)
		}
	}
	if err := m.c.WaitClusterOK(ctx, within); err != nil {
		return moved, err
	}
	return moved, m.c.RefreshClusterRoles(ctx)
}

// migrating reports whether the source still marks the slot migrating.
func (m *migration) migrating(ctx context.Context) (bool, error) {
	s, err := myselfLine(ctx, m.c, m.src)
	if err != nil {
		return false, err
	}
	return strings.Contains(s, fmt.Sprintf("[%d->-", m.slot)), nil
}

// myselfLine is m's own line of CLUSTER NODES.
func myselfLine(ctx context.Context, c *cluster.Cluster, m *cluster.Member) (string, error) {
	v, err := c.Do(ctx, m, "CLUSTER", "NODES")
	if err != nil {
		return "", err
	}
	s, _ := v.(string)
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, "myself") {
			return line, nil
		}
	}
	return "", fmt.Errorf("%s: no myself line in CLUSTER NODES", m.Name)
}

func (clusterMigrate) Inject(ctx context.Context, env Env, target string, p Params) (Heal, error) {
	step, err := migrateStep(p)
	if err != nil {
		return nil, err
	}
	within, err := clusterWithin.duration(p)
	if err != nil {
		return nil, err
	}
	m, err := planMigration(ctx, env, target, p)
	if err != nil {
		return nil, err
	}
	// A migration left half done is finished by the heal (at the latest at
	// the cycle's end), so that the next cycle starts from a stable slot.
	heal := func(ctx context.Context) error {
		on, err := m.migrating(ctx)
		if err != nil || !on {
			return err
		}
		moved, err := m.finish(ctx, within)
		env.Logf("cluster-migrate-slot heal: slot %d finished to %s (%d keys moved)", m.slot, m.dst.Name, len(moved))
		return err
	}
	switch step {
	case "begin":
		if err := m.begin(ctx); err != nil {
			return nil, err
		}
		env.Logf("slot %d migrating from %s to %s", m.slot, m.src.Name, m.dst.Name)
		return heal, nil
	case "move":
		moved, err := m.move(ctx)
		if err != nil {
			return heal, err
		}
		env.Logf("slot %d: %d key(s) moved from %s to %s: %v", m.slot, len(moved), m.src.Name, m.dst.Name, moved)
		return heal, nil
	case "finish":
		moved, err := m.finish(ctx, within)
		if err != nil {
			return nil, err
		}
		env.Logf("slot %d now served by %s (%d key(s) moved at the finish)", m.slot, m.dst.Name, len(moved))
		return nil, nil
	}
	if err := m.begin(ctx); err != nil {
		return nil, err
	}
	moved, err := m.finish(ctx, within)
	if err != nil {
		heal(ctx)
		return nil, err
	}
	env.Logf("slot %d moved from %s to %s with %d key(s): %v", m.slot, m.src.Name, m.dst.Name, len(moved), moved)
	return nil, nil
}

// effect: after begin, the source marks the slot migrating to the
// destination and the destination importing from the source; after move,
// the source holds no key of the slot (the destination holds what it
// had); after finish (or all), every node names the destination as the
// slot's owner.
func (clusterMigrate) effect(ctx context.Context, env Env, target string, p Params) func(context.Context) Effect {
	step, err := migrateStep(p)
	if err != nil {
		return nil
	}
	m, err := planMigration(ctx, env, target, p)
	if err != nil {
		return nil
	}
	return func(ctx context.Context) Effect {
		switch step {
		case "begin":
			src, err1 := myselfLine(ctx, m.c, m.src)
			dst, err2 := myselfLine(ctx, m.c, m.dst)
			if err1 != nil || err2 != nil {
				return Effect{Unchecked: true, What: fmt.Sprintf("CLUSTER NODES: %v %v", err1, err2)}
			}
			mig := strings.Contains(src, fmt.Sprintf("[%d->-%s]", m.slot, m.dstID))
			imp := strings.Contains(dst, fmt.Sprintf("[%d-<-%s]", m.slot, m.srcID))
			return Effect{Seen: mig && imp, What: fmt.Sprintf("slot %d migrating on %s: %v, importing on %s: %v", m.slot, m.src.Name, mig, m.dst.Name, imp)}
		case "move":
			ns, err1 := m.c.Do(ctx, m.src, "CLUSTER", "COUNTKEYSINSLOT", m.slot)
			nd, err2 := m.c.Do(ctx, m.dst, "CLUSTER", "COUNTKEYSINSLOT", m.slot)
			if err1 != nil || err2 != nil {
				return Effect{Unchecked: true, What: fmt.Sprintf("COUNTKEYSINSLOT: %v %v", err1, err2)}
			}
			return Effect{Seen: ns == int64(0), What: fmt.Sprintf("slot %d holds %v key(s) on %s, %v on %s", m.slot, ns, m.src.Name, nd, m.dst.Name)}
		}
		view, err := m.c.ClusterView(ctx)
		if err != nil {
			return Effect{Unchecked: true, What: fmt.Sprintf("CLUSTER NODES: %v", err)}
		}
		for _, n := range view {
			if n.Member == m.dst && servesSlot(n.Slots, m.slot) {
				return Effect{Seen: true, What: fmt.Sprintf("slot %d moved from %s to %s", m.slot, m.src.Name, m.dst.Name)}
			}
		}
		return Effect{What: fmt.Sprintf("slot %d not served by %s", m.slot, m.dst.Name)}
	}
}

// servesSlot reports whether CLUSTER NODES slot fields include slot
// (bracketed migration entries left out).
func servesSlot(fields []string, slot int) bool {
	for _, f := range fields {
		if strings.HasPrefix(f, "[") {
			continue
		}
		var lo, hi int
		if n, _ := fmt.Sscanf(f, "%d-%d", &lo, &hi); n == 2 {
			if slot >= lo && slot <= hi {
				return true
			}
		} else if n, _ := fmt.Sscanf(f, "%d", &lo); n == 1 && lo == slot {
			return true
		}
	}
	return false
}
