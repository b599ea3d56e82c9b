package cluster

import (
	"context"
	"fmt"
)

// BackendKind names a backend on the command line, in lockfaulttest's
// options and in LOCKFAULT_BACKEND. It is parsed in one place, ParseBackend.
type BackendKind string

// The backends.
const (
	BackendAuto    BackendKind = "auto"    // docker when an engine answers, else process
	BackendDocker  BackendKind = "docker"  // containers through testcontainers-go
	BackendProcess BackendKind = "process" // local processes
)

// BackendKinds lists the kinds, in the order messages name them.
var BackendKinds = []BackendKind{BackendDocker, BackendProcess, BackendAuto}

// ParseBackend parses a backend name; "" is auto.
func ParseBackend(s string) (BackendKind, error) {
	switch k := BackendKind(s); k {
	case "":
		return BackendAuto, nil
	case BackendAuto, BackendDocker, BackendProcess:
		return k, nil
	}
	return "", fmt.Errorf("%q is not allowed (allowed: docker, process, auto)", s)
}

// String is the name.
func (k BackendKind) String() string { return string(k) }

// Set parses a flag value (flag.Value).
func (k *BackendKind) Set(s string) error {
	v, err := ParseBackend(s)
	if err != nil {
		return err
	}
	*k = v
	return nil
}

// DockerImpl is the Docker backend's entry points. The backend lives in
// package cluster/docker, which sets them when imported (simulate imports
// it): a binary that does not, a user's test binary for one, links neither
// testcontainers-go nor the Docker client, and runs its nodes as local
// processes.
type DockerImpl struct {
	New       func(ctx context.Context, runID string) (Backend, error)
	Available func(ctx context.Context) bool // an engine answers
}

var docker DockerImpl

// SetDocker links the Docker backend (package cluster/docker's init).
func SetDocker(d DockerImpl) { docker = d }

// DockerLinked: the Docker backend is linked into this binary.
func DockerLinked() bool { return docker.New != nil }

// errNoDocker says how to link the Docker backend.
var errNoDocker = fmt.Errorf("the Docker backend is not linked into this binary: import _ \"github.com/lockfault/lockfault/cluster/docker\" (simulate does), or use the process backend")

// NewBackend starts a backend of this kind for a run; auto picks Docker when
// it is linked and an engine answers.
func (k BackendKind) NewBackend(ctx context.Context, runID string) (Backend, error) {
	switch k {
	case BackendProcess:
		return NewProcess(runID)
	case BackendDocker:
		if !DockerLinked() {
			return nil, errNoDocker
		}
		return docker.New(ctx, runID)
	case BackendAuto, "":
		if DockerLinked() && docker.Available(ctx) {
			return docker.New(ctx, runID)
		}
		return NewProcess(runID)
	}
	return nil, fmt.Errorf("backend %q is not allowed (allowed: docker, process, auto)", string(k))
}
