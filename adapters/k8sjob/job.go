package k8sjob

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/lockfault/lockfault/campaign"
	"github.com/lockfault/lockfault/campaign/builtin"
)

// Where the pod sees its files.
const (
	DefinitionDir  = "/campaign"               // the ConfigMap, read-only
	DefinitionPath = "/campaign/campaign.yaml" // the definition in it
	ResultsDir     = "/results"                // the results volume: /results/shard-<i>
	definitionKey  = "campaign.yaml"
)

// Bounds of the options.
const (
	MaxParallelism = 100 // pods at once
	MaxRunsPerPod  = campaign.MaxParallel
	// ConfigMapLimit is what a ConfigMap may hold (the API server's 1 MiB,
	// less room for the object's own fields).
	ConfigMapLimit = 1<<20 - 16<<10
)

// UID and GID the pod runs as: not root, and not an account of the image.
const RunAs = 65532

// Options describe the Job. Errors name them as flags ("-shards: ...").
type Options struct {
	// Name of the Job and the ConfigMap ("-campaign" is added to the
	// latter): a DNS-1123 label of at most 52 characters (the Job
	// controller appends to it for its pods).
	Name      string
	Namespace string
	// Image holds simulate, redis-server, redis-sentinel, etcd, /bin/sh
	// and, for the clock and power-loss faults, the clock shim (see
	// docs/CAMPAIGNS.md). Its simulate must be the build the merge uses.
	Image string
	// DefinitionFile is the campaign definition on this machine; it is
	// checked here (a broken one never reaches the cluster) and put in the
	// ConfigMap with every scenario file it names.
	DefinitionFile string
	// Shards is N: one completion, one pod, per shard.
	Shards int
	// Parallelism is how many shards run at once (default: all).
	Parallelism int
	// RunsPerPod is simulate campaign's -parallel (default 1).
	RunsPerPod int
	// ResultsClaim is a PersistentVolumeClaim (ReadWriteMany when pods of
	// several nodes share it) the shards write into, each its own folder.
	ResultsClaim string
	// CPU and Memory of each pod (requests; memory is also the limit).
	// Defaults: 2 and 2Gi.
	CPU, Memory string
	// RetriesPerShard is how often a failed shard is started again
	// (backoffLimitPerIndex, default 2); a shard started again continues
	// where it stopped, its finished runs kept.
	RetriesPerShard int
}

// Build checks the options and the definition and builds the ConfigMap
// and the Job.
func Build(o Options) (*batchv1.Job, *corev1.ConfigMap, error) {
	def, files, err := o.check()
	if err != nil {
		return nil, nil, err
	}
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: o.meta(o.Name + "-campaign"),
		Data:       map[string]string{},
	}
	items := []corev1.KeyToPath{}
	for i, f := range files {
		key := definitionKey
		if i > 0 {
			key = fmt.Sprintf("scenario-%d.yaml", i)
		}
		cm.Data[key] = f.text
		items = append(items, corev1.KeyToPath{Key: key, Path: f.path})
	}
	mem := resource.MustParse(o.Memory)
	job := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: o.meta(o.Name),
		Spec: batchv1.JobSpec{
			CompletionMode:       ptr(batchv1.IndexedCompletion),
			Completions:          ptr(int32(o.Shards)),
			Parallelism:          ptr(int32(o.Parallelism)),
			BackoffLimitPerIndex: ptr(int32(o.RetriesPerShard)),
			// Exit code 2 is bad input (the definition, a flag): trying
			// again cannot help, so the shard fails at once.
			PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
				Action:      batchv1.PodFailurePolicyActionFailIndex,
				OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{2}},
			}}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: o.labels()},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					AutomountServiceAccountToken: ptr(false),
					EnableServiceLinks:           ptr(false),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr(true),
						RunAsUser:      ptr(int64(RunAs)),
						RunAsGroup:     ptr(int64(RunAs)),
						FSGroup:        ptr(int64(RunAs)), // the results volume is writable by the pod
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:    "simulate",
						Image:   o.Image,
						Command: []string{"/bin/sh", "-c", ShardScript(o.Shards, o.RunsPerPod)},
						Env:     []corev1.EnvVar{{Name: "TMPDIR", Value: "/tmp"}},
						SecurityContext: &corev1.SecurityContext{
							Privileged:               ptr(false),
							AllowPrivilegeEscalation: ptr(false),
							ReadOnlyRootFilesystem:   ptr(true),
							RunAsNonRoot:             ptr(true),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(o.CPU), corev1.ResourceMemory: mem},
							Limits:   corev1.ResourceList{corev1.ResourceMemory: mem},
						},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "campaign", MountPath: DefinitionDir, ReadOnly: true},
							{Name: "results", MountPath: ResultsDir},
							{Name: "tmp", MountPath: "/tmp"},
						},
					}},
					Volumes: []corev1.Volume{
						{Name: "campaign", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name}, Items: items}}},
						{Name: "results", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: o.ResultsClaim}}},
						// The nodes' data directories and sockets: the root
						// file system is read-only.
						{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					},
				},
			},
		},
	}
	job.Annotations = map[string]string{"lockfault/campaign": def.Name, "lockfault/runs": fmt.Sprint(def.Runs())}
	return job, cm, nil
}

// ShardScript is the pod's command: the Job's JOB_COMPLETION_INDEX counts
// from 0, a shard from 1, so the shell adds one; each shard writes its own
// folder of the results volume.
func ShardScript(shards, runsPerPod int) string {
	return fmt.Sprintf(`set -eu
i=$((JOB_COMPLETION_INDEX + 1))
exec simulate campaign -def %s -shard "$i/%d" -backend process -parallel %d -results "%s/shard-$i"`,
		DefinitionPath, shards, runsPerPod, ResultsDir)
}

// MergeScript is the merge step, once every shard has completed: in a pod
// like the Job's (the same image and results volume), every shard folder
// merged into /results/merged (campaign.json, campaign.md, junit.xml).
// Its exit code is simulate merge's: 0, 1 when cells differ from the
// promise table, 2 when shards or runs are missing.
func MergeScript() string {
	return fmt.Sprintf("set -eu\nexec simulate merge -out %s/merged %s/shard-*", ResultsDir, ResultsDir)
}

func (o Options) labels() map[string]string {
	return map[string]string{"app.kubernetes.io/name": "lockfault", "app.kubernetes.io/component": "campaign", "lockfault/campaign": o.Name}
}

func (o Options) meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: o.Namespace, Labels: o.labels()}
}

// file is one file of the ConfigMap: its path under DefinitionDir and text.
type file struct{ path, text string }

// check fills defaults, refuses bad options and reads the definition.
func (o *Options) check() (*campaign.Definition, []file, error) {
	if o.Parallelism == 0 {
		o.Parallelism = o.Shards
	}
	if o.RunsPerPod == 0 {
		o.RunsPerPod = 1
	}
	if o.RetriesPerShard == 0 {
		o.RetriesPerShard = 2
	}
	if o.CPU == "" {
		o.CPU = "2"
	}
	if o.Memory == "" {
		o.Memory = "2Gi"
	}
	label := func(flag, v string, maxLen int) error {
		if errs := validation.IsDNS1123Label(v); len(errs) > 0 || len(v) > maxLen {
			return fmt.Errorf("-%s: %q is not a name Kubernetes accepts (allowed: at most %d lower-case letters, digits and -, starting and ending with a letter or digit)", flag, v, maxLen)
		}
		return nil
	}
	qty := func(flag, v string) error {
		if q, err := resource.ParseQuantity(v); err != nil || q.Sign() <= 0 {
			return fmt.Errorf("-%s: %q (allowed: a positive Kubernetes quantity such as 2, 500m, 2Gi)", flag, v)
		}
		return nil
	}
	// Every option that is missing or not allowed, in one message.
	var bad []string
	add := func(err error) {
		if err != nil {
			bad = append(bad, err.Error())
		}
	}
	add(label("name", o.Name, 52))
	if o.Namespace != "" {
		add(label("namespace", o.Namespace, 63))
	}
	if o.Image == "" || len(o.Image) > 512 || strings.ContainsAny(o.Image, " \t\n") {
		add(fmt.Errorf("-image: %q (allowed: an image reference, e.g. registry.example/lockfault:1.0; make campaign-image builds one)", o.Image))
	}
	if o.Shards < 1 || o.Shards > campaign.MaxShards {
		add(fmt.Errorf("-shards: %d (allowed: 1 to %d)", o.Shards, campaign.MaxShards))
	} else if o.Parallelism < 1 || o.Parallelism > min(o.Shards, MaxParallelism) {
		add(fmt.Errorf("-parallelism: %d (allowed: 1 to %d, at most the shards)", o.Parallelism, min(o.Shards, MaxParallelism)))
	}
	if o.RunsPerPod < 1 || o.RunsPerPod > MaxRunsPerPod {
		add(fmt.Errorf("-runs-per-pod: %d (allowed: 1 to %d)", o.RunsPerPod, MaxRunsPerPod))
	}
	if o.RetriesPerShard < 0 || o.RetriesPerShard > 10 {
		add(fmt.Errorf("-retries: %d (allowed: 0 to 10)", o.RetriesPerShard))
	}
	if o.ResultsClaim == "" || validation.IsDNS1123Subdomain(o.ResultsClaim) != nil {
		add(fmt.Errorf("-results-claim: %q (allowed: the name of a PersistentVolumeClaim, ReadWriteMany when the pods may run on several nodes)", o.ResultsClaim))
	}
	add(qty("cpu", o.CPU))
	add(qty("memory", o.Memory))
	if o.DefinitionFile == "" {
		add(fmt.Errorf("-def: missing (allowed: a campaign definition file; simulate campaign -emit k8s also takes a campaign's flags)"))
	}
	switch len(bad) {
	case 0:
	case 1:
		return nil, nil, errors.New(bad[0])
	default:
		return nil, nil, fmt.Errorf("%d options missing or not allowed:\n  %s", len(bad), strings.Join(bad, "\n  "))
	}
	def, err := campaign.ReadFile(o.DefinitionFile, builtin.Registry())
	if err != nil {
		return nil, nil, err
	}
	text, err := readText(o.DefinitionFile)
	if err != nil {
		return nil, nil, err
	}
	files := []file{{definitionKey, text}}
	size := len(text)
	for _, it := range def.Items {
		if it.Path == "" {
			continue
		}
		p := path.Clean(it.Name)
		if strings.HasPrefix(p, "../") || p == ".." || p == definitionKey || slices.ContainsFunc(files, func(f file) bool { return f.path == p }) {
			return nil, nil, fmt.Errorf("-def: scenario %s: a scenario file of a campaign run on Kubernetes must lie in or below the definition's folder, and not be named %s", it.Name, definitionKey)
		}
		t, err := readText(it.Path)
		if err != nil {
			return nil, nil, err
		}
		size += len(t)
		files = append(files, file{p, t})
	}
	if size > ConfigMapLimit {
		return nil, nil, fmt.Errorf("-def: the definition and its scenario files are %d bytes (allowed: at most %d, what a ConfigMap holds)", size, ConfigMapLimit)
	}
	return def, files, nil
}

func ptr[T any](v T) *T { return &v }
