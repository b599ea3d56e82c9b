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

// NewBackend starts a backend of this kind for a run; auto picks Docker when
// an engine answers.
func (k BackendKind) NewBackend(ctx context.Context, runID string) (Backend, error) {
	switch k {
	case BackendProcess:
		return NewProcess(runID)
	case BackendDocker:
		return NewDocker(ctx, runID)
	case BackendAuto, "":
		if DockerAvailable(ctx) {
			return NewDocker(ctx, runID)
		}
		return NewProcess(runID)
	}
	return nil, fmt.Errorf("backend %q is not allowed (allowed: docker, process, auto)", string(k))
}
