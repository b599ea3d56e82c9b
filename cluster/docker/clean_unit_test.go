package docker

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

// refusingDaemon refuses the first refusals removals of a container, as a
// loaded daemon does, then removes it; every other call panics (the
// embedded interface is nil).
type refusingDaemon struct {
	client.APIClient
	refusals, calls int
}

func (d *refusingDaemon) ContainerRemove(ctx context.Context, id string, _ client.ContainerRemoveOptions) (client.ContainerRemoveResult, error) {
	d.calls++
	if d.calls <= d.refusals {
		return client.ContainerRemoveResult{}, errors.New("Could not kill running container " + id + ", cannot remove - tried to kill container, but did not receive an exit event")
	}
	return client.ContainerRemoveResult{}, nil
}

func TestRemoveContainerRetriesARefusal(t *testing.T) {
	d := &refusingDaemon{refusals: 2}
	if err := removeContainer(context.Background(), d, "c0ffee"); err != nil {
		t.Fatalf("refused twice, then removed: %v", err)
	}
	if d.calls != 3 {
		t.Errorf("%d removal calls, want 3", d.calls)
	}
	// A daemon that never gives in: reported once the context ends, with
	// the daemon's own words.
	d = &refusingDaemon{refusals: 1 << 30}
	ctx, cancel := context.WithTimeout(context.Background(), 2*containerRemovePause)
	defer cancel()
	err := removeContainer(ctx, d, "c0ffee")
	if err == nil || !strings.Contains(err.Error(), "did not receive an exit event") {
		t.Fatalf("a removal never done: %v", err)
	}
	if d.calls < 2 {
		t.Errorf("%d removal calls before giving up, want a retry", d.calls)
	}
}

// answerLosingDaemon creates a network as the daemon does, and answers
// only a request whose context is still live: the Docker client gives up
// on a cancelled request at once, while the daemon goes on creating.
type answerLosingDaemon struct {
	client.APIClient
	created []string
}

func (d *answerLosingDaemon) NetworkCreate(ctx context.Context, name string, _ client.NetworkCreateOptions) (client.NetworkCreateResult, error) {
	d.created = append(d.created, name)
	if err := ctx.Err(); err != nil {
		return client.NetworkCreateResult{}, err
	}
	return client.NetworkCreateResult{ID: "net-" + name}, nil
}

// A run interrupted while it creates its network still learns the
// network's ID, so Close removes it; the run fails with the interruption.
func TestInterruptedNetworkCreateIsKnown(t *testing.T) {
	daemon := &answerLosingDaemon{}
	d := &Docker{prefix: "lockfault-test-run", cli: daemon}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Ctrl-C as the request goes out
	err := d.createNetwork(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("an interrupted create: %v, want the interruption", err)
	}
	if len(daemon.created) != 1 || d.netID != "net-lockfault-test-run" {
		t.Errorf("the daemon created %v; the run knows network %q, want its ID (Close removes it)", daemon.created, d.netID)
	}
}

// slowRemovingDaemon removes a network only for a request that may wait
// work long: one whose deadline is sooner gets the client's own
// deadline error, as a request given up on while a loaded daemon works.
type slowRemovingDaemon struct {
	client.APIClient
	work  time.Duration
	calls int
}

func (d *slowRemovingDaemon) NetworkRemove(ctx context.Context, id string, _ client.NetworkRemoveOptions) (client.NetworkRemoveResult, error) {
	d.calls++
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d.work {
		return client.NetworkRemoveResult{}, context.DeadlineExceeded
	}
	return client.NetworkRemoveResult{}, nil
}

// A removal the daemon takes longer to answer than the retries' bound is
// waited for (seen under two campaigns at once: "remove network …:
// context deadline exceeded", the run unable to tell it done).
func TestSlowNetworkRemovalIsWaitedFor(t *testing.T) {
	d := &slowRemovingDaemon{work: 2 * networkRemoveRetry}
	if err := removeNetwork(context.Background(), d, "net-1"); err != nil {
		t.Fatalf("a removal that takes %v: %v", d.work, err)
	}
	if d.calls != 1 {
		t.Errorf("%d removal calls, want 1", d.calls)
	}
	// One that takes longer than a request may wait is reported.
	d = &slowRemovingDaemon{work: 2 * networkRemoveLimit}
	if err := removeNetwork(context.Background(), d, "net-1"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a removal that takes %v: %v, want the deadline reported", d.work, err)
	}
}

// lateDaemon answers a network create with the client's own deadline error
// and creates the network anyway, listed from the appearsAt-th list on, as
// a loaded daemon does; beside it a network whose name merely contains the
// run's. It records the networks removed.
type lateDaemon struct {
	client.APIClient
	name      string
	appearsAt int
	lists     int
	removed   []string
}

func (d *lateDaemon) NetworkCreate(context.Context, string, client.NetworkCreateOptions) (client.NetworkCreateResult, error) {
	return client.NetworkCreateResult{}, context.DeadlineExceeded
}

func (d *lateDaemon) NetworkList(context.Context, client.NetworkListOptions) (client.NetworkListResult, error) {
	d.lists++
	items := []network.Summary{{Network: network.Network{Name: d.name + "-other", ID: "net-other"}}}
	if d.lists >= d.appearsAt {
		items = append(items, network.Summary{Network: network.Network{Name: d.name, ID: "net-late"}})
	}
	return client.NetworkListResult{Items: items}, nil
}

func (d *lateDaemon) NetworkInspect(context.Context, string, client.NetworkInspectOptions) (client.NetworkInspectResult, error) {
	var r client.NetworkInspectResult
	r.Network.IPAM.Config = []network.IPAMConfig{{Gateway: netip.MustParseAddr("172.30.0.1")}}
	return r, nil
}

func (d *lateDaemon) ContainerList(context.Context, client.ContainerListOptions) (client.ContainerListResult, error) {
	return client.ContainerListResult{}, nil
}

func (d *lateDaemon) NetworkRemove(_ context.Context, id string, _ client.NetworkRemoveOptions) (client.NetworkRemoveResult, error) {
	d.removed = append(d.removed, id)
	return client.NetworkRemoveResult{}, nil
}

func (d *lateDaemon) Close() error { return nil }

// A network whose create request the client gave up on, and which the
// daemon created after, is the run's: used when it appears while the run
// waits, removed at Close when it appears only after.
func TestLateNetworkIsUsedOrRemoved(t *testing.T) {
	daemon := &lateDaemon{name: "lockfault-test-run", appearsAt: 3}
	d := &Docker{prefix: daemon.name, runID: "test-run", cli: daemon}
	if err := d.createNetwork(context.Background()); err != nil {
		t.Fatalf("a network created after the request's limit: %v, want it used", err)
	}
	if d.netID != "net-late" || d.gateway != "172.30.0.1" {
		t.Errorf("network %q, gateway %q: want net-late and its gateway", d.netID, d.gateway)
	}
	// Given up on for good, then created: Close finds it by name and run.
	d = &Docker{prefix: daemon.name, netName: daemon.name, runID: "test-run", cli: daemon}
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(daemon.removed) != 1 || daemon.removed[0] != "net-late" {
		t.Errorf("Close removed %v, want [net-late] (not the network named after it)", daemon.removed)
	}
	// One that never appears is waited for no longer than asked.
	daemon = &lateDaemon{name: "lockfault-test-run", appearsAt: 1 << 30}
	d = &Docker{prefix: daemon.name, netName: daemon.name, runID: "test-run", cli: daemon}
	if id := d.awaitNetwork(context.Background(), 3*networkPoll); id != "" || daemon.lists > 4 {
		t.Errorf("a network never created: %q after %d lists", id, daemon.lists)
	}
}
