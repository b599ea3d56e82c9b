package campaign

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

const workflowPath = "../examples/ci/lockfault-campaign.yml"

// workflow is the part of a GitHub Actions workflow the check reads.
type workflow struct {
	Env  map[string]string `yaml:"env"`
	Jobs map[string]struct {
		Needs    any `yaml:"needs"`
		Strategy struct {
			Matrix map[string]any `yaml:"matrix"`
		} `yaml:"strategy"`
		Steps []struct {
			Name string            `yaml:"name"`
			Uses string            `yaml:"uses"`
			Run  string            `yaml:"run"`
			With map[string]string `yaml:"with"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

// checkWorkflow checks that the example's matrix and merge agree: the
// matrix lists shards 1 to N where N is env.SHARDS, each matrix job runs
// `simulate campaign -shard ${{ matrix.shard }}/${{ env.SHARDS }}` and
// uploads that shard's results folder under a name the merge job's
// download pattern matches, and the merge job needs the matrix and runs
// `simulate merge` on the folder the artifacts are downloaded to.
func checkWorkflow(data []byte) error {
	var w workflow
	if err := yaml.Unmarshal(data, &w); err != nil {
		return err
	}
	n, err := strconv.Atoi(w.Env["SHARDS"])
	if err != nil || n < 1 || n > 256 || n > MaxShards {
		return fmt.Errorf("env.SHARDS = %q: want N from 1 to 256 (a matrix holds at most 256 jobs)", w.Env["SHARDS"])
	}
	shard, ok := w.Jobs["shard"]
	if !ok {
		return fmt.Errorf("no job shard")
	}
	list, _ := shard.Strategy.Matrix["shard"].([]any)
	var got []int
	for _, v := range list {
		i, _ := v.(int)
		got = append(got, i)
	}
	var want []int
	for i := 1; i <= n; i++ {
		want = append(want, i)
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("matrix.shard = %v, want %v (env.SHARDS = %d)", got, want, n)
	}
	results, upload := "", ""
	for _, s := range shard.Steps {
		if strings.Contains(s.Run, "simulate campaign") {
			f := words(s.Run)
			if i := slices.Index(f, "-shard"); i < 0 || i+1 >= len(f) || f[i+1] != "${{matrix.shard}}/${{env.SHARDS}}" {
				return fmt.Errorf("the campaign step does not run -shard ${{ matrix.shard }}/${{ env.SHARDS }}: %q", s.Run)
			}
			if i := slices.Index(f, "-results"); i >= 0 && i+1 < len(f) {
				results = f[i+1]
			}
		}
		if strings.HasPrefix(s.Uses, "actions/upload-artifact@") {
			if strings.Join(words(s.With["path"]), " ") != results || results == "" {
				return fmt.Errorf("the upload's path %q is not the campaign's -results folder %q", s.With["path"], results)
			}
			upload = strings.Join(words(s.With["name"]), " ")
		}
	}
	if results == "" || !strings.Contains(results, "${{matrix.shard}}") || upload == "" {
		return fmt.Errorf("the shard job must run simulate campaign into a -results folder per shard and upload it (results %q, artifact %q)", results, upload)
	}
	merge, ok := w.Jobs["merge"]
	if !ok || fmt.Sprint(merge.Needs) != "shard" && fmt.Sprint(merge.Needs) != "[shard]" {
		return fmt.Errorf("no job merge that needs the shard job")
	}
	downloaded, merged := "", false
	for _, s := range merge.Steps {
		if strings.HasPrefix(s.Uses, "actions/download-artifact@") {
			pat := s.With["pattern"]
			if !strings.HasSuffix(pat, "*") || !strings.HasPrefix(upload, strings.TrimSuffix(pat, "*")) || strings.TrimPrefix(upload, strings.TrimSuffix(pat, "*")) != "${{matrix.shard}}" {
				return fmt.Errorf("the download pattern %q does not match the shards' artifacts %q", pat, upload)
			}
			downloaded = s.With["path"]
		}
		if strings.Contains(s.Run, "simulate merge") {
			if downloaded == "" || !slices.Contains(strings.Fields(s.Run), downloaded) {
				return fmt.Errorf("the merge step %q does not read the downloaded folder %q", s.Run, downloaded)
			}
			merged = true
		}
	}
	if !merged {
		return fmt.Errorf("the merge job has no simulate merge step")
	}
	return nil
}

// words splits a command line into words, an expression ${{ x }} one word.
func words(s string) []string {
	return strings.Fields(strings.NewReplacer("${{ ", "${{", " }}", "}}").Replace(s))
}

// The example workflow passes the check, and the check refuses a matrix
// that does not agree with N, a shard step that does not use it, and a
// merge that reads the wrong folder.
func TestCIWorkflowMatrixAndMergeAgree(t *testing.T) {
	data, err := os.ReadFile(workflowPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkWorkflow(data); err != nil {
		t.Fatalf("%s: %v", workflowPath, err)
	}
	text := string(data)
	broken := map[string]string{
		"a matrix of 3 for N=4":   strings.Replace(text, "shard: [1, 2, 3, 4]", "shard: [1, 2, 3]", 1),
		"N=5 with a matrix of 4":  strings.Replace(text, `SHARDS: "4"`, `SHARDS: "5"`, 1),
		"a fixed N in the step":   strings.Replace(text, "-shard ${{ matrix.shard }}/${{ env.SHARDS }}", "-shard ${{ matrix.shard }}/3", 1),
		"a merge of another path": strings.Replace(text, "merge -out merged shards", "merge -out merged results", 1),
		"no merge step":           strings.Replace(text, "./bin/simulate merge", "./bin/simulate list", 1),
		"another artifact name":   strings.Replace(text, "pattern: lockfault-shard-*", "pattern: shard-*", 1),
	}
	for what, w := range broken {
		if w == text {
			t.Fatalf("%s: the mutation did not apply", what)
		}
		if err := checkWorkflow([]byte(w)); err == nil {
			t.Errorf("%s: the check passed", what)
		}
	}
}
