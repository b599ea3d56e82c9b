package tools

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
)

// workflows are the GitHub Actions workflows lockfault ships, from the
// repository's root.
var workflows = []string{"examples/ci/lockfault-campaign.yml"}

// TestWorkflowsPassActionlint lints every workflow lockfault ships with
// actionlint, the linter its users run on theirs (syntax, expressions and
// their types, the matrix, job needs, action inputs, runner labels), as a
// library: shellcheck and pyflakes are not run, so the result does not
// depend on what this machine has installed. campaign's
// TestCIWorkflowMatrixAndMergeAgree checks what actionlint cannot: that
// the matrix, the shard step and the merge agree with each other.
func TestWorkflowsPassActionlint(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, wf := range workflows {
		path := filepath.Join(root, wf)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		l, err := actionlint.NewLinter(&out, &actionlint.LinterOptions{Oneline: true, LogWriter: io.Discard, WorkingDir: root})
		if err != nil {
			t.Fatal(err)
		}
		errs, err := l.Lint(wf, data, nil)
		if err != nil {
			t.Fatalf("%s: %v", wf, err)
		}
		if len(errs) > 0 {
			t.Errorf("actionlint: %d errors in %s:\n%s", len(errs), wf, out.String())
		}
	}
}

// TestActionlintCatchesABrokenWorkflow: the linter as called here does
// report errors (a job that needs one that does not exist, an unknown
// expression context), so a clean result above means something.
func TestActionlintCatchesABrokenWorkflow(t *testing.T) {
	broken := `on: push
jobs:
  merge:
    needs: shard
    runs-on: ubuntu-latest
    steps:
      - run: echo ${{ matrx.shard }}
`
	l, err := actionlint.NewLinter(io.Discard, &actionlint.LinterOptions{LogWriter: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	errs, err := l.Lint("broken.yml", []byte(broken), nil)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range errs {
		kinds = append(kinds, e.Kind)
	}
	if len(errs) < 2 {
		t.Errorf("actionlint found %d errors (%v) in a workflow with a missing needs and an unknown context", len(errs), kinds)
	}
}
