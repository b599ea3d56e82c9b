package cluster_test

// The cluster tests that run on both backends reach the Docker backend
// through BackendKind docker: this external test file links it into the
// package's test binary (package cluster cannot import cluster/docker, which
// imports it).
import _ "github.com/lockfault/lockfault/cluster/docker"
