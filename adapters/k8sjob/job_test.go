package k8sjob

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/lockfault/lockfault/campaign"
)

func testOptions() Options {
	return Options{Name: "lockfault-nightly", Namespace: "lockfault", Image: "registry.example/lockfault:1.0",
		DefinitionFile: "testdata/campaign.yaml", Shards: 4, Parallelism: 2, RunsPerPod: 2, ResultsClaim: "lockfault-results"}
}

// decode splits the YAML stream and decodes each object strictly with the
// k8s types: an unknown or misspelt field is an error, not a silent drop.
func decode(t *testing.T, data []byte) (*corev1.ConfigMap, *batchv1.Job) {
	t.Helper()
	docs := strings.Split(string(data), "\n---\n")
	if len(docs) != 3 {
		t.Fatalf("%d documents, want a comment, a ConfigMap and a Job:\n%s", len(docs), data)
	}
	var cm corev1.ConfigMap
	var job batchv1.Job
	if err := yaml.UnmarshalStrict([]byte(docs[1]), &cm); err != nil {
		t.Fatalf("ConfigMap: %v", err)
	}
	if err := yaml.UnmarshalStrict([]byte(docs[2]), &job); err != nil {
		t.Fatalf("Job: %v", err)
	}
	return &cm, &job
}

func TestJobYAMLDecodesStrictly(t *testing.T) {
	data, err := YAML(testOptions())
	if err != nil {
		t.Fatal(err)
	}
	cm, job := decode(t, data)
	def, _ := os.ReadFile("testdata/campaign.yaml")
	scen, _ := os.ReadFile("testdata/mine/quick.yaml")
	if cm.Kind != "ConfigMap" || cm.Name != "lockfault-nightly-campaign" || cm.Data["campaign.yaml"] != string(def) || cm.Data["scenario-1.yaml"] != string(scen) {
		t.Fatalf("ConfigMap %+v", cm)
	}
	s := job.Spec
	switch {
	case job.APIVersion != "batch/v1" || job.Kind != "Job" || job.Name != "lockfault-nightly" || job.Namespace != "lockfault":
		t.Fatalf("Job meta %+v %+v", job.TypeMeta, job.ObjectMeta)
	case s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion:
		t.Fatalf("completionMode %v, want Indexed", s.CompletionMode)
	case *s.Completions != 4 || *s.Parallelism != 2 || *s.BackoffLimitPerIndex != 2:
		t.Fatalf("completions %d, parallelism %d, backoffLimitPerIndex %d", *s.Completions, *s.Parallelism, *s.BackoffLimitPerIndex)
	case job.Annotations["lockfault/runs"] != "80":
		t.Fatalf("annotations %v", job.Annotations)
	}
	r := s.PodFailurePolicy.Rules[0]
	if r.Action != batchv1.PodFailurePolicyActionFailIndex || !slices.Equal(r.OnExitCodes.Values, []int32{2}) {
		t.Fatalf("pod failure policy %+v", r)
	}
	pod := s.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyNever || *pod.AutomountServiceAccountToken {
		t.Fatalf("pod %+v", pod)
	}
	psc := pod.SecurityContext
	if !*psc.RunAsNonRoot || *psc.RunAsUser != RunAs || *psc.FSGroup != RunAs || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Fatalf("pod security context %+v", psc)
	}
	c := pod.Containers[0]
	sc := c.SecurityContext
	if *sc.Privileged || *sc.AllowPrivilegeEscalation || !*sc.ReadOnlyRootFilesystem || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
		t.Fatalf("container security context %+v: want unprivileged, every capability dropped, none added (no NET_ADMIN)", sc)
	}
	if c.Image != "registry.example/lockfault:1.0" || c.Command[0] != "/bin/sh" || c.Command[2] != ShardScript(4, 2) {
		t.Fatalf("container %+v", c)
	}
	if !strings.Contains(c.Command[2], `simulate campaign -def /campaign/campaign.yaml -shard "$i/4" -backend process`) {
		t.Fatalf("command %q", c.Command[2])
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		vols[v.Name] = v
	}
	if mounts["campaign"] != DefinitionDir || mounts["results"] != ResultsDir || mounts["tmp"] != "/tmp" {
		t.Fatalf("mounts %v", mounts)
	}
	if vols["results"].PersistentVolumeClaim.ClaimName != "lockfault-results" || vols["campaign"].ConfigMap.Name != cm.Name || vols["tmp"].EmptyDir == nil {
		t.Fatalf("volumes %+v", vols)
	}
	paths := map[string]string{}
	for _, it := range vols["campaign"].ConfigMap.Items {
		paths[it.Key] = it.Path
	}
	if paths["campaign.yaml"] != "campaign.yaml" || paths["scenario-1.yaml"] != "mine/quick.yaml" {
		t.Fatalf("the ConfigMap's files land at %v: the definition's relative scenario path must resolve", paths)
	}
	// The strict decoding catches a misspelt field (a check that can fail).
	bad := strings.Replace(string(data), "completionMode: Indexed", "completionMod: Indexed", 1)
	if err := yaml.UnmarshalStrict([]byte(strings.Split(bad, "\n---\n")[2]), &batchv1.Job{}); err == nil {
		t.Fatal("a misspelt field decoded without error")
	}
}

// The shell wrapper turns the Job's 0-based JOB_COMPLETION_INDEX into the
// 1-based shards 1/N to N/N (run with a stand-in simulate that prints its
// arguments), and each shard's -shard value is one campaign.ParseShard
// accepts; the wrapper without the +1, the broken one, asks for shard 0.
func TestShardScriptNumbersShardsFromOne(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh on this machine")
	}
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "simulate"), []byte("#!/bin/sh\nprintf '%s\\n' \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	shards := func(script string, n int) ([]string, error) {
		var got []string
		for idx := range n {
			cmd := exec.Command(sh, "-c", script)
			cmd.Env = []string{"PATH=" + bin, fmt.Sprintf("JOB_COMPLETION_INDEX=%d", idx)}
			out, err := cmd.Output()
			if err != nil {
				return nil, err
			}
			args := strings.Split(strings.TrimSpace(string(out)), "\n")
			i, r := slices.Index(args, "-shard"), slices.Index(args, "-results")
			if i < 0 || r < 0 || i+1 >= len(args) || r+1 >= len(args) {
				return nil, fmt.Errorf("args %q", args)
			}
			if _, err := campaign.ParseShard(args[i+1]); err != nil {
				return nil, err
			}
			if args[r+1] != fmt.Sprintf("/results/shard-%d", idx+1) {
				return nil, fmt.Errorf("shard %s writes %s", args[i+1], args[r+1])
			}
			got = append(got, args[i+1])
		}
		return got, nil
	}
	got, err := shards(ShardScript(3, 1), 3)
	if err != nil || strings.Join(got, " ") != "1/3 2/3 3/3" {
		t.Fatalf("shards %v, %v", got, err)
	}
	broken := strings.Replace(ShardScript(3, 1), "$((JOB_COMPLETION_INDEX + 1))", "$JOB_COMPLETION_INDEX", 1)
	if _, err := shards(broken, 3); err == nil || !strings.Contains(err.Error(), `-shard: "0/3" has i = 0`) {
		t.Fatalf("the 0-based wrapper: %v", err)
	}
}

func TestBuildRefusesBadOptions(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(dir, "sub", "campaign.yaml")
	os.MkdirAll(filepath.Dir(outside), 0o755)
	quick, _ := os.ReadFile("testdata/mine/quick.yaml")
	os.WriteFile(filepath.Join(dir, "up.yaml"), quick, 0o644)
	os.WriteFile(outside, []byte("repetitions: 1\nsubjects: [{lock: single}]\nitems: [{scenario: ../up.yaml}]\n"), 0o644)
	cases := []struct {
		edit func(*Options)
		want string
	}{
		{func(o *Options) { o.Name = "Nightly" }, `-name: "Nightly" is not a name Kubernetes accepts`},
		{func(o *Options) { o.Name = strings.Repeat("a", 53) }, "-name:"},
		{func(o *Options) { o.Shards = 0 }, "-shards: 0 (allowed: 1 to 1000)"},
		{func(o *Options) { o.Shards = 1001 }, "-shards: 1001 (allowed: 1 to 1000)"},
		{func(o *Options) { o.Parallelism = 5 }, "-parallelism: 5 (allowed: 1 to 4, at most the shards)"},
		{func(o *Options) { o.RunsPerPod = 17 }, "-runs-per-pod: 17 (allowed: 1 to 16)"},
		{func(o *Options) { o.Image = "" }, `-image: ""`},
		{func(o *Options) { o.ResultsClaim = "" }, `-results-claim: ""`},
		{func(o *Options) { o.Memory = "lots" }, `-memory: "lots"`},
		{func(o *Options) { o.DefinitionFile = "testdata/none.yaml" }, "no such file"},
		{func(o *Options) { o.DefinitionFile = outside }, "must lie in or below the definition's folder"},
	}
	for _, c := range cases {
		o := testOptions()
		c.edit(&o)
		if _, _, err := Build(o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %s", err, c.want)
		}
	}
}

// TestBuildNamesEveryMissingOptionAtOnce: with nothing but the definition
// given, one error names -image, -shards and -results-claim, so a user
// fixes them in one attempt.
func TestBuildNamesEveryMissingOptionAtOnce(t *testing.T) {
	_, _, err := Build(Options{Name: "lockfault", DefinitionFile: "testdata/campaign.yaml"})
	if err == nil {
		t.Fatal("no error without -image, -shards and -results-claim")
	}
	for _, want := range []string{"3 options missing or not allowed", "\n  -image: \"\"", "\n  -shards: 0", "\n  -results-claim: \"\""} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "-parallelism") {
		t.Errorf("-parallelism is named though only -shards is wrong:\n%v", err)
	}
	_, _, err = Build(Options{})
	if err == nil || !strings.Contains(err.Error(), "-def: missing") || !strings.Contains(err.Error(), "-name:") {
		t.Errorf("no options at all: %v", err)
	}
}

// docs/CAMPAIGNS.md shows the YAML Build emits for testdata/campaign.yaml.
func TestDocsShowTheEmittedYAML(t *testing.T) {
	data, err := YAML(testOptions())
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../../docs/CAMPAIGNS.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(doc, data) {
		t.Fatalf("docs/CAMPAIGNS.md does not show the current YAML; it is:\n%s", data)
	}
}
