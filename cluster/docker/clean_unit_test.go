package docker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

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
