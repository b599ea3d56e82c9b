package docs

import (
	"strings"
	"testing"
)

// Every package of the module sits on a floor, and imports only packages
// on its floor or below: an import that runs back up (runner importing the
// pages, a report writer importing runner) fails here, naming both ends.
func TestImportsRunDownward(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	pkgs, err := scanPackages(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{".", "runner", "report", "cmd/simulate"} {
		if _, ok := pkgs[want]; !ok {
			t.Fatalf("the scan found no package %s: it is not the module's tree", want)
		}
	}
	if probs := layoutProblems(pkgs); len(probs) > 0 {
		t.Errorf("%d problems with the floors (docs/layout.go):\n%s", len(probs), strings.Join(probs, "\n"))
	}
}

// The check fails on a back-import and on a package without a floor, and
// passes an import down a floor: shown on made-up packages.
func TestLayoutProblemsCatchABackImport(t *testing.T) {
	pkgs := map[string]*pkgInfo{}
	for _, f := range floors {
		for _, p := range f.pkgs {
			pkgs[p] = &pkgInfo{}
		}
	}
	pkgs["runner"] = &pkgInfo{imports: []string{"checker", "report"}}
	if probs := layoutProblems(pkgs); len(probs) != 0 {
		t.Fatalf("imports down a floor reported: %v", probs)
	}
	pkgs["runner"] = &pkgInfo{imports: []string{"pages"}}
	pkgs["report"] = &pkgInfo{imports: []string{"runner"}}
	pkgs["newpkg"] = &pkgInfo{}
	probs := strings.Join(layoutProblems(pkgs), "\n")
	for _, want := range []string{"runner (floor 4, one run) imports pages", "report (floor 3, backends, the nemesis, one run's report) imports runner", "newpkg has no floor"} {
		if !strings.Contains(probs, want) {
			t.Errorf("problems lack %q:\n%s", want, probs)
		}
	}
}
