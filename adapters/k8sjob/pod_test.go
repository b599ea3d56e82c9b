package k8sjob

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/lockfault/lockfault/campaign"
)

// podDefinition is the tiny campaign the pods run: 2 runs, one a shard.
const podDefinition = `name: pod-test
repetitions: 2
subjects:
  - lock: single
items:
  - property: exclusion/no-faults
`

// TestJobPodsRunInDocker runs the emitted Job's pod, one per shard, in
// Docker exactly as its spec says: its command, its environment with
// JOB_COMPLETION_INDEX, its user and group (and fsGroup on the results
// volume), a read-only root, every capability dropped, no privilege
// escalation, the emptyDir at /tmp, the ConfigMap's files, one shared
// results volume; then the merge step (MergeScript) in the same pod, and
// checks the merged cells equal those of the same campaign run unsharded.
// It fails if the image lacks a server (the runs would be harness errors),
// if the command wrote outside /tmp and the results volume (the root is
// read-only) or if a shard's index were off by one (a shard 0/2 is refused,
// a shard 3/2 too; two pods on one shard leave the other missing).
// The image is LOCKFAULT_CAMPAIGN_IMAGE, else built by
// cluster/image/campaign.sh (make campaign-image) from bin/.
func TestJobPodsRunInDocker(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the campaign image and runs real nodes")
	}
	if err := exec.Command("docker", "info").Run(); err != nil {
		t.Skip("no Docker engine:", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	image := campaignImage(t, ctx)

	dir := t.TempDir()
	def := filepath.Join(dir, "campaign.yaml")
	if err := os.WriteFile(def, []byte(podDefinition), 0o644); err != nil {
		t.Fatal(err)
	}
	const shards = 2
	data, err := YAML(Options{Name: "pod-test", Image: image, DefinitionFile: def, Shards: shards, ResultsClaim: "results", Memory: "1Gi"})
	if err != nil {
		t.Fatal(err)
	}
	cm, job := decode(t, data)
	if got := *job.Spec.Completions; got != shards {
		t.Fatalf("completions %d, want %d", got, shards)
	}
	pod := podOf(t, job, cm, dir)

	// One pod per completion index, side by side as the Job runs them.
	var wg sync.WaitGroup
	outs := make([]string, shards)
	codes := make([]int, shards)
	for i := range shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], outs[i] = pod.run(ctx, t, i, nil)
		}()
	}
	wg.Wait()
	for i := range shards {
		if codes[i] != 0 {
			t.Fatalf("pod %d (JOB_COMPLETION_INDEX=%d): exit %d\n%s", i, i, codes[i], outs[i])
		}
	}
	// The merge step, in the same pod.
	if code, out := pod.run(ctx, t, -1, []string{"/bin/sh", "-c", MergeScript()}); code > 1 {
		t.Fatalf("the merge step: exit %d\n%s", code, out)
	}
	sharded := readReport(t, filepath.Join(pod.results, "merged"))
	if !sharded.Complete() || !slices.Equal(sharded.Merged, []string{"1/2", "2/2"}) || sharded.Done != 2 {
		t.Fatalf("merged: %s; shards %v; %d runs, want both shards and 2 runs", sharded.CompletenessText(), sharded.Merged, sharded.Done)
	}
	// The same campaign unsharded, in the same pod, and merged alone.
	whole := []string{"/bin/sh", "-c", fmt.Sprintf("simulate campaign -def %s -backend process -results %s/whole && exec simulate merge -out %s/whole-merged %s/whole",
		DefinitionPath, ResultsDir, ResultsDir, ResultsDir)}
	if code, out := pod.run(ctx, t, -1, whole); code > 1 {
		t.Fatalf("the unsharded campaign: exit %d\n%s", code, out)
	}
	unsharded := readReport(t, filepath.Join(pod.results, "whole-merged"))
	if got, want := cellsOf(sharded), cellsOf(unsharded); !slices.Equal(got, want) {
		t.Errorf("the sharded campaign's cells differ from the unsharded one's:\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	for _, c := range sharded.Cells {
		if c.Count(campaign.HarnessError) > 0 || c.Count(campaign.Held) != c.Runs {
			t.Errorf("cell %s: %v (want every run held; a harness error is a pod that cannot run the campaign): %s", c.Key, c.Counts, c.Finding)
		}
	}
	if sharded.DefinitionHash != unsharded.DefinitionHash {
		t.Errorf("definition hash %s sharded, %s unsharded", sharded.DefinitionHash, unsharded.DefinitionHash)
	}
}

// A shard index off by one is refused by the pod's own command: index 2 of
// 2 shards is shard 3/2.
func TestJobPodRefusesAnIndexPastTheShards(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the campaign image")
	}
	if err := exec.Command("docker", "info").Run(); err != nil {
		t.Skip("no Docker engine:", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	image := campaignImage(t, ctx)
	dir := t.TempDir()
	def := filepath.Join(dir, "campaign.yaml")
	if err := os.WriteFile(def, []byte(podDefinition), 0o644); err != nil {
		t.Fatal(err)
	}
	data, err := YAML(Options{Name: "pod-test", Image: image, DefinitionFile: def, Shards: 2, ResultsClaim: "results"})
	if err != nil {
		t.Fatal(err)
	}
	cm, job := decode(t, data)
	pod := podOf(t, job, cm, dir)
	if code, out := pod.run(ctx, t, 2, nil); code != 2 || !strings.Contains(out, "3/2") {
		t.Errorf("JOB_COMPLETION_INDEX=2 of 2 shards: exit %d, want 2 naming shard 3/2:\n%s", code, out)
	}
}

// campaignImage is LOCKFAULT_CAMPAIGN_IMAGE, or the image campaign.sh
// builds (once per test binary) from the module root's bin/, tagged
// testImage: one tag for every test run, so a rebuild replaces the image
// the tag named before (campaign.sh removes it) instead of leaving an image
// of about 430 MB per commit tested.
func campaignImage(t *testing.T, ctx context.Context) string {
	t.Helper()
	if img := os.Getenv("LOCKFAULT_CAMPAIGN_IMAGE"); img != "" {
		return img
	}
	imageOnce.Do(func() {
		root, err := filepath.Abs("../..")
		if err != nil {
			imageErr = err
			return
		}
		cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "cluster", "image", "campaign.sh"))
		cmd.Env = append(os.Environ(), "LOCKFAULT_CAMPAIGN_IMAGE="+testImage)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			imageErr = fmt.Errorf("cluster/image/campaign.sh (make build first): %v\n%s", err, stderr.String())
			return
		}
		lines := strings.Fields(string(out))
		if len(lines) == 0 {
			imageErr = fmt.Errorf("cluster/image/campaign.sh printed no image\n%s", stderr.String())
			return
		}
		imageRef = lines[len(lines)-1]
	})
	if imageErr != nil {
		t.Fatal(imageErr)
	}
	return imageRef
}

// testImage is the tag the tests build the campaign image under.
const testImage = "lockfault-campaign:test"

var (
	imageOnce sync.Once
	imageRef  string
	imageErr  error
)

// pod is the Job's pod template as docker run arguments, with its
// volumes made on this machine: the ConfigMap's items in a folder mounted
// read-only, the results volume one folder shared by every pod (owned by
// the pod's fsGroup, as Kubernetes makes it), a fresh folder per pod for
// each emptyDir.
type pod struct {
	spec    corev1.PodSpec
	c       corev1.Container
	config  string // the ConfigMap volume's folder
	results string // the results volume's folder
	dir     string
	id      string
}

func podOf(t *testing.T, job *batchv1.Job, cm *corev1.ConfigMap, dir string) *pod {
	t.Helper()
	spec := job.Spec.Template.Spec
	if len(spec.Containers) != 1 || len(spec.InitContainers) != 0 {
		t.Fatalf("%d containers, %d init containers: the test runs one container", len(spec.Containers), len(spec.InitContainers))
	}
	b := make([]byte, 4)
	rand.Read(b)
	p := &pod{spec: spec, c: spec.Containers[0], dir: dir, id: hex.EncodeToString(b)}
	for _, v := range spec.Volumes {
		switch {
		case v.ConfigMap != nil:
			if v.ConfigMap.Name != cm.Name {
				t.Fatalf("volume %s: ConfigMap %s, the emitted one is %s", v.Name, v.ConfigMap.Name, cm.Name)
			}
			p.config = filepath.Join(dir, "configmap")
			for _, it := range v.ConfigMap.Items {
				text, ok := cm.Data[it.Key]
				if !ok {
					t.Fatalf("volume %s: key %s is not in the ConfigMap", v.Name, it.Key)
				}
				f := filepath.Join(p.config, filepath.FromSlash(it.Path))
				os.MkdirAll(filepath.Dir(f), 0o755)
				if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		case v.PersistentVolumeClaim != nil:
			p.results = filepath.Join(dir, "results")
			os.MkdirAll(p.results, 0o775)
			if g := spec.SecurityContext.FSGroup; g != nil {
				// fsGroup: the volume belongs to the group, setgid.
				if err := os.Chown(p.results, 0, int(*g)); err != nil {
					t.Fatal(err)
				}
				os.Chmod(p.results, 0o2775)
			}
		case v.EmptyDir != nil:
		default:
			t.Fatalf("volume %s: a kind the test does not make", v.Name)
		}
	}
	if p.config == "" || p.results == "" {
		t.Fatalf("the pod has no ConfigMap or no results volume: %+v", spec.Volumes)
	}
	return p
}

// run starts the pod for completion index i (-1: none, for the merge step)
// with command instead of the container's when given, and returns its exit
// code and output.
func (p *pod) run(ctx context.Context, t *testing.T, i int, command []string) (int, string) {
	psc, sc := p.spec.SecurityContext, p.c.SecurityContext
	name := fmt.Sprintf("lockfault-podtest-%s-%d", p.id, i+1)
	args := []string{"run", "--rm", "--name", name, "--network", "none", "--label", "lockfault.podtest=1"}
	if psc == nil || sc == nil || psc.RunAsUser == nil || psc.RunAsGroup == nil {
		t.Fatal("the pod names no user and group")
	}
	args = append(args, "--user", fmt.Sprintf("%d:%d", *psc.RunAsUser, *psc.RunAsGroup))
	if psc.FSGroup != nil {
		args = append(args, "--group-add", strconv.FormatInt(*psc.FSGroup, 10))
	}
	if sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem {
		args = append(args, "--read-only")
	}
	if sc.Capabilities != nil {
		for _, c := range sc.Capabilities.Drop {
			args = append(args, "--cap-drop", string(c))
		}
		for _, c := range sc.Capabilities.Add {
			args = append(args, "--cap-add", string(c))
		}
	}
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		args = append(args, "--security-opt", "no-new-privileges")
	}
	if sc.Privileged != nil && *sc.Privileged {
		args = append(args, "--privileged")
	}
	if m, ok := p.c.Resources.Limits[corev1.ResourceMemory]; ok {
		args = append(args, "--memory", strconv.FormatInt(m.Value(), 10))
	}
	for _, e := range p.c.Env {
		args = append(args, "--env", e.Name+"="+e.Value)
	}
	if i >= 0 {
		args = append(args, "--env", fmt.Sprintf("JOB_COMPLETION_INDEX=%d", i))
	}
	for _, m := range p.c.VolumeMounts {
		var src string
		for _, v := range p.spec.Volumes {
			if v.Name != m.Name {
				continue
			}
			switch {
			case v.ConfigMap != nil:
				src = p.config
			case v.PersistentVolumeClaim != nil:
				src = p.results
			case v.EmptyDir != nil:
				// A fresh emptyDir for each pod: world-writable, as the
				// kubelet makes it.
				src = filepath.Join(p.dir, fmt.Sprintf("emptydir-%s-%d", m.Name, i+1))
				os.RemoveAll(src)
				os.MkdirAll(src, 0o777)
				os.Chmod(src, 0o777)
			}
		}
		if src == "" {
			t.Fatalf("mount %s: no volume of that name", m.Name)
		}
		mount := fmt.Sprintf("type=bind,source=%s,target=%s", src, m.MountPath)
		if m.ReadOnly {
			mount += ",readonly"
		}
		args = append(args, "--mount", mount)
	}
	if p.c.WorkingDir != "" {
		args = append(args, "--workdir", p.c.WorkingDir)
	}
	cmd := p.c.Command
	if command != nil {
		cmd = command
	}
	if len(cmd) == 0 {
		t.Fatal("the container has no command")
	}
	args = append(args, "--entrypoint", cmd[0], p.c.Image)
	args = append(args, cmd[1:]...)
	args = append(args, p.c.Args...)
	out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput()
	if ctx.Err() != nil {
		exec.Command("docker", "rm", "-f", name).Run()
		t.Fatalf("pod %s: %v\n%s", name, ctx.Err(), out)
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	} else if err != nil {
		t.Fatalf("docker run: %v\n%s", err, out)
	}
	return 0, string(out)
}

func readReport(t *testing.T, dir string) *campaign.Report {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, campaign.FileJSON))
	if err != nil {
		t.Fatal(err)
	}
	var r campaign.Report
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// cellsOf is each cell as a line: key, planned, runs, counts, verdict.
func cellsOf(r *campaign.Report) []string {
	var out []string
	for _, c := range r.Cells {
		out = append(out, fmt.Sprintf("%s planned %d runs %d %v %s", c.Key, c.Planned, c.Runs, c.Counts, c.Verdict))
	}
	slices.Sort(out)
	return out
}
