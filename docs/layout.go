package docs

import (
	"context"
	"fmt"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// modulePath is the import path of lockfault's main module.
const modulePath = "github.com/lockfault/lockfault"

// A floor is a set of packages of the main module; floors are listed from
// the bottom up. A package imports only packages on its own floor or below
// (TestImportsRunDownward), so data flows up: nothing below the report
// writers imports them, and runner imports nothing that orchestrates runs.
type floor struct {
	name string
	pkgs []string // relative to the module root; "." is the root package
}

var floors = []floor{
	{"vocabulary and helpers", []string{".", "internal/printable", "internal/userfile", "internal/procwatch", "internal/cgroup", "internal/interrupt", "cluster/shimfile"}},
	{"records and parts", []string{"history", "card", "lockimpl", "resp"}},
	{"judging, nodes, clients", []string{"checker", "register", "scenarios", "cluster", "worker"}},
	{"backends, the nemesis, one run's report", []string{"cluster/docker", "faults", "report", "internal/reportfixture", "internal/gobuild", "workercheck"}},
	{"one run", []string{"runner"}},
	{"over many runs", []string{"campaign", "pages", "plots"}},
	{"orchestration of runs", []string{"suite", "claims", "hunt", "campaign/builtin", "lockfaulttest"}},
	{"commands, generated docs, workers of other languages", []string{"cmd/simulate", "docs", "cluster/image/nodectl", "faults/clockoverlay", "examples"}},
}

// floorOf maps a package to its floor's index.
func floorOf() map[string]int {
	m := map[string]int{}
	for i, f := range floors {
		for _, p := range f.pkgs {
			m[p] = i
		}
	}
	return m
}

// pkgInfo is what the layout needs of a package: its doc comment's first
// sentence and the packages of the main module it imports (test files
// left out: they may import above, as an integration test does).
type pkgInfo struct {
	synopsis string
	imports  []string // relative to the module root, sorted
}

// moduleRoot is the main module's root: this file's folder's parent.
func moduleRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return "", fmt.Errorf("cannot locate the source tree (built with -trimpath?)")
	}
	return filepath.Dir(filepath.Dir(file)), nil
}

// scanPackages reads every package of the main module under root: folders
// with Go files that are not tests, skipping nested modules (a go.mod of
// their own), testdata and hidden folders.
func scanPackages(root string) (map[string]*pkgInfo, error) {
	out := map[string]*pkgInfo{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != root {
			if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		}
		info, err := scanPackage(path)
		if err != nil || info == nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		out[filepath.ToSlash(rel)] = info
		return nil
	})
	return out, err
}

// scanPackage parses the non-test Go files of one folder (imports and
// comments only); nil when there are none.
func scanPackage(dir string) (*pkgInfo, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	info := &pkgInfo{}
	found := false
	seen := map[string]bool{}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return nil, err
		}
		found = true
		if f.Doc != nil && info.synopsis == "" {
			info.synopsis = new(doc.Package).Synopsis(f.Doc.Text())
		}
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return nil, err
			}
			rel, ok := strings.CutPrefix(p, modulePath)
			if !ok || (rel != "" && !strings.HasPrefix(rel, "/")) {
				continue
			}
			rel = strings.TrimPrefix(rel, "/")
			if rel == "" {
				rel = "."
			}
			if !seen[rel] {
				seen[rel] = true
				info.imports = append(info.imports, rel)
			}
		}
	}
	if !found {
		return nil, nil
	}
	slices.Sort(info.imports)
	return info, nil
}

// layoutProblems lists every package without a floor, every floor entry
// without a package, and every import that runs up a floor.
func layoutProblems(pkgs map[string]*pkgInfo) []string {
	fl := floorOf()
	var out []string
	for _, p := range slices.Sorted(maps.Keys(pkgs)) {
		i, ok := fl[p]
		if !ok {
			out = append(out, fmt.Sprintf("%s has no floor: add it to docs/layout.go's floors", p))
			continue
		}
		for _, imp := range pkgs[p].imports {
			j, ok := fl[imp]
			if ok && j > i {
				out = append(out, fmt.Sprintf("%s (floor %d, %s) imports %s (floor %d, %s): an import that runs back up", p, i, floors[i].name, imp, j, floors[j].name))
			}
		}
	}
	for _, f := range floors {
		for _, p := range f.pkgs {
			if _, ok := pkgs[p]; !ok {
				out = append(out, fmt.Sprintf("floor %q names %s, which is not a package of the module", f.name, p))
			}
		}
	}
	return out
}

// layoutTable: the floors from the top down, each package with its one
// job (its doc comment's first sentence) and what of the module it imports.
func layoutTable(context.Context) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	pkgs, err := scanPackages(root)
	if err != nil {
		return "", err
	}
	if probs := layoutProblems(pkgs); len(probs) > 0 {
		return "", fmt.Errorf("the layout is broken:\n%s", strings.Join(probs, "\n"))
	}
	var b strings.Builder
	b.WriteString("| floor | package | its one job (doc comment) | imports from the module |\n|---|---|---|---|\n")
	for i := len(floors) - 1; i >= 0; i-- {
		f := floors[i]
		for _, p := range f.pkgs {
			info := pkgs[p]
			job := info.synopsis
			if job == "" {
				job = "(no package doc comment)"
			}
			imps := "—"
			if len(info.imports) > 0 {
				imps = "`" + strings.Join(info.imports, "`, `") + "`"
			}
			fmt.Fprintf(&b, "| %d %s | `%s` | %s | %s |\n", i, f.name, p, cell(job), imps)
		}
	}
	return b.String(), nil
}
