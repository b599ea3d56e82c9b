package docker

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
)

// DockerAvailable reports whether a Docker engine answers within 2 s.
func DockerAvailable(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	ch := make(chan bool, 1)
	go func() {
		cli, err := dockerClient(ctx)
		if err != nil {
			ch <- false
			return
		}
		defer cli.Close()
		_, err = cli.Ping(ctx, client.PingOptions{})
		ch <- err == nil
	}()
	select {
	case ok := <-ch:
		return ok
	case <-ctx.Done():
		return false
	}
}

var quietOnce sync.Once

// disableRyuk sets TESTCONTAINERS_RYUK_DISABLED=true unless it is set, and
// refuses any other value: the reaper's image can't be pulled here.
func disableRyuk() error {
	v, ok := os.LookupEnv("TESTCONTAINERS_RYUK_DISABLED")
	if !ok {
		return os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
	if v != "true" {
		return fmt.Errorf("TESTCONTAINERS_RYUK_DISABLED=%q: the docker backend needs it to be \"true\" (Ryuk can't be pulled)", v)
	}
	return nil
}

// quietTestcontainers silences testcontainers' global logger (it prints a
// banner on first connection) unless LOCKFAULT_DOCKER_VERBOSE is set.
func quietTestcontainers() {
	quietOnce.Do(func() {
		if os.Getenv("LOCKFAULT_DOCKER_VERBOSE") == "" {
			tclog.SetDefault(tclog.NewNoopLogger())
		}
	})
}

// dockerClient connects to the engine testcontainers would use.
func dockerClient(ctx context.Context) (*testcontainers.DockerClient, error) {
	if err := disableRyuk(); err != nil {
		return nil, err
	}
	quietTestcontainers()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return nil, fmt.Errorf("docker: %w", err)
	}
	return cli, nil
}
