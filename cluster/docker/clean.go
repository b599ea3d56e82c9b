package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/lockfault/lockfault/cluster"
	"github.com/moby/moby/client"
)

// CleanDocker removes every container, network and volume labelled
// LabelApp=1 whose harness is gone, whatever run made them (for `simulate
// clean` after a harness was killed), on the daemon DOCKER_HOST names (the
// default socket if unset). It returns how many it removed.
func CleanDocker(ctx context.Context) (int, error) {
	return cleanDocker(ctx, cluster.LabelApp+"=1")
}

// cleanDocker removes the containers (servers first, then the sandboxes
// whose network namespaces they share, and the toxiproxy containers), then
// the networks and the volumes, carrying label (key=value).
func cleanDocker(ctx context.Context, label string) (int, error) {
	cli, err := dockerClient(ctx)
	if err != nil {
		return 0, err
	}
	defer cli.Close()
	removed := 0
	var errs []error
	f := make(client.Filters).Add("label", label)
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return 0, fmt.Errorf("docker: list containers: %w", err)
	}
	var servers, sandboxes []string
	for _, c := range list.Items {
		if runAlive(c.Labels) {
			continue // a run still in progress
		}
		if c.Labels[labelRole] == roleServer {
			servers = append(servers, c.ID)
		} else {
			sandboxes = append(sandboxes, c.ID)
		}
	}
	rmErrs := removeContainers(ctx, cli, servers, sandboxes)
	removed += len(servers) + len(sandboxes) - len(rmErrs)
	errs = append(errs, rmErrs...)
	nets, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		return removed, errors.Join(append(errs, fmt.Errorf("docker: list networks: %w", err))...)
	}
	for _, nw := range nets.Items {
		if runAlive(nw.Labels) {
			continue
		}
		if err := removeNetwork(ctx, cli, nw.ID); err != nil {
			errs = append(errs, err)
		} else {
			removed++
		}
	}
	vols, err := cli.VolumeList(ctx, client.VolumeListOptions{Filters: f})
	if err != nil {
		return removed, errors.Join(append(errs, fmt.Errorf("docker: list volumes: %w", err))...)
	}
	for _, v := range vols.Items {
		if runAlive(v.Labels) {
			continue
		}
		if err := removeVolume(ctx, cli, v.Name); err != nil {
			errs = append(errs, err)
		} else {
			removed++
		}
	}
	return removed, errors.Join(errs...)
}

// runAlive reports whether the objects with these labels may belong to a
// run in progress: their harness (LabelOwner) is alive on this host, or
// they were made from another host (LabelHost), where this one cannot tell.
func runAlive(labels map[string]string) bool {
	if h, ok := labels[cluster.LabelHost]; ok && h != harnessHost() {
		return true
	}
	return cluster.OwnerAlive(labels[cluster.LabelOwner])
}

// harnessHost names this host in LabelHost.
func harnessHost() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "unknown"
	}
	return h
}

// removeContainers removes each group in turn, each group in parallel, and
// returns one error per container it failed to remove.
func removeContainers(ctx context.Context, cli client.APIClient, groups ...[]string) []error {
	var errs []error
	for _, ids := range groups {
		seen := map[string]bool{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, id := range ids {
			if id == "" || seen[id] {
				continue
			}
			seen[id] = true
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := removeContainer(ctx, cli, id); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
	}
	return errs
}

func removeContainer(ctx context.Context, cli client.APIClient, id string) error {
	// A loaded daemon may refuse a forced removal ("tried to kill
	// container, but did not receive an exit event") and take it a moment
	// later: retry a while, at most containerRemoveRetry (measured: a run
	// beside seven others and four busy loops left its killed container
	// behind after one refusal).
	ctx, cancel := context.WithTimeout(ctx, containerRemoveRetry)
	defer cancel()
	for {
		_, err := cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err == nil || cerrdefs.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("docker: remove container %.12s: %w", id, err)
		case <-time.After(containerRemovePause):
		}
	}
}

func removeNetwork(ctx context.Context, cli client.APIClient, id string) error {
	// Right after its containers are removed, the daemon may still count
	// an endpoint of theirs (a start cut short by Ctrl-C): retry a while,
	// at most networkRemoveRetry (a stale endpoint can outlive the daemon's
	// own cleanup: then the error is reported). The retries' bound is not
	// the request's: a loaded daemon took more than networkRemoveRetry to
	// answer one removal (two campaigns at once, load average 19), and a
	// request given up on the client's side is one the run cannot tell
	// done, so each request waits up to networkRemoveLimit.
	retry := time.Now().Add(networkRemoveRetry)
	for {
		rctx, cancel := context.WithTimeout(ctx, networkRemoveLimit)
		_, err := cli.NetworkRemove(rctx, id, client.NetworkRemoveOptions{})
		cancel()
		if err == nil || cerrdefs.IsNotFound(err) {
			return nil
		}
		if !strings.Contains(err.Error(), "active endpoints") || time.Now().After(retry) {
			return fmt.Errorf("docker: remove network %.12s: %w", id, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("docker: remove network %.12s: %w", id, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// DockerLeftovers counts the containers, networks and volumes of one run
// that still exist (tests use it to prove cleanup).
func DockerLeftovers(ctx context.Context, runID string) (int, error) {
	cli, err := dockerClient(ctx)
	if err != nil {
		return 0, err
	}
	defer cli.Close()
	f := make(client.Filters).Add("label", cluster.LabelRun+"="+runID)
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return 0, err
	}
	nets, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		return 0, err
	}
	vols, err := cli.VolumeList(ctx, client.VolumeListOptions{Filters: f})
	if err != nil {
		return 0, err
	}
	return len(list.Items) + len(nets.Items) + len(vols.Items), nil
}
