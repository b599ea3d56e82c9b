// Package k8sjob builds the Kubernetes objects that run a lockfault campaign
// as an Indexed Job: a ConfigMap holding the campaign definition (and the
// scenario files it names), and a batch/v1 Job with completionMode
// Indexed, one completion per shard, whose pods each run `simulate
// campaign -shard i/N -backend process` into their own folder of a shared
// results volume, unprivileged. It only builds and marshals the objects
// (from the k8s API types); applying them is kubectl's job.
package k8sjob
