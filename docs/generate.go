// Package docs keeps the tables of lockfault's documentation true: each is
// generated from the code (the catalogue's scenarios, the property suite and
// its promise table, the locks, the faults) between markers in a page of
// this folder, and TestGeneratedDocsAreCurrent fails when a committed page
// differs from what the code says. `make docs` (go test ./docs -update)
// rewrites them.
package docs

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/claims"
	"github.com/lockfault/lockfault/faults"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/runner"
	"github.com/lockfault/lockfault/scenarios"
	"github.com/lockfault/lockfault/suite"
)

// A section is one generated table: the page it lives in, its name in the
// page's markers, and how to make it.
type section struct {
	file, name string
	gen        func(ctx context.Context) (string, error)
}

var sections = []section{
	{"CLAIMS.md", "catalogue", catalogueTable},
	{"PROPERTIES.md", "properties", propertyTable},
	{"PROPERTIES.md", "promises", promiseTable},
	{"PROPERTIES.md", "remedies", remedyTable},
	{"LOCKS.md", "locks", lockTable},
	{"FAULTS.md", "faults", faultTable},
	{"LAYOUT.md", "layout", layoutTable},
}

func begin(name string) string { return "<!-- BEGIN generated:" + name + " (make docs) -->\n" }
func end(name string) string   { return "<!-- END generated:" + name + " -->" }

// Update compares (or, with write, rewrites) every generated section of
// the pages in dir, and returns the sections that were stale.
func Update(ctx context.Context, dir string, write bool) (stale []string, err error) {
	pages := map[string]string{}
	for _, s := range sections {
		path := filepath.Join(dir, s.file)
		page, ok := pages[path]
		if !ok {
			b, err := os.ReadFile(path)
			if err != nil {
				return nil, err
			}
			page = string(b)
		}
		i := strings.Index(page, begin(s.name))
		j := strings.Index(page, end(s.name))
		if i < 0 || j < i {
			return nil, fmt.Errorf("%s: no markers for the generated section %q (%q ... %q)", path, s.name, strings.TrimSpace(begin(s.name)), end(s.name))
		}
		body, err := s.gen(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: section %s: %w", path, s.name, err)
		}
		if page[i+len(begin(s.name)):j] != body {
			stale = append(stale, s.file+": "+s.name)
			page = page[:i+len(begin(s.name))] + body + page[j:]
		}
		pages[path] = page
	}
	if write {
		for path, page := range pages {
			if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
				return stale, err
			}
		}
	}
	return stale, nil
}

// cell escapes a table cell.
func cell(s string) string {
	return strings.ReplaceAll(strings.Join(strings.Fields(s), " "), "|", `\|`)
}

// catalogueTable: every claim's scenarios, their locks and expectations.
func catalogueTable(context.Context) (string, error) {
	entries, err := claims.Catalogue(nil)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("| claim | scenario | variant | lock | expected | what happens |\n|---|---|---|---|---|---|\n")
	for _, e := range entries {
		base, err := scenarios.Load(e.Scenario)
		if err != nil {
			return "", err
		}
		sc, err := base.WithVariant(e.Variant)
		if err != nil {
			return "", err
		}
		what, _, _ := strings.Cut(strings.TrimSpace(sc.Description), ". ")
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", sc.Claim, e.Scenario, orDash(e.Variant), sc.Lock.Name,
			strings.Join(sc.Expect, ", "), cell(strings.TrimSuffix(what, ".")))
	}
	return b.String(), nil
}

// propertyTable: every property, what it applies to and its promise.
func propertyTable(context.Context) (string, error) {
	var b strings.Builder
	b.WriteString("| property | applies to | requires | mutation pair (violates / holds) | the promise |\n|---|---|---|---|---|\n")
	for _, p := range suite.All() {
		needs := "every lock"
		if p.Cluster == nil && len(p.Needs) == 0 {
			needs = "every lock but a cluster's"
		}
		pair := p.Broken + " / " + p.Correct
		if len(p.Needs) > 0 {
			var ns []string
			for _, n := range p.Needs {
				ns = append(ns, string(n))
			}
			if p.Cluster != nil {
				ns = append(ns, string(lockfault.NeedsCluster))
			}
			needs = strings.Join(ns, ", ")
		}
		if c := p.Cluster; c != nil {
			pair += "; on a cluster " + c.Broken + " / " + c.Correct
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", p.Name, needs, p.Requirement(), pair, cell(p.Explanation))
	}
	return b.String(), nil
}

// shipped is every lock lockfault ships: this binary's and lockfault-ext's.
func shipped(ctx context.Context) ([]lockimpl.Info, error) {
	var out []lockimpl.Info
	for _, n := range lockimpl.Names() {
		i, _ := lockimpl.Lookup(n)
		out = append(out, i)
	}
	ext, err := runner.ExtLocks(ctx)
	if err != nil {
		return nil, err
	}
	if runner.ExtWorker() == "" {
		return nil, fmt.Errorf("the published libraries' locks come from bin/lockfault-ext: build it first (make adapters)")
	}
	out = append(out, ext...)
	slices.SortFunc(out, func(a, b lockimpl.Info) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// promiseTable: what each shipped lock is expected to do on each property.
func promiseTable(ctx context.Context) (string, error) {
	locks, err := shipped(ctx)
	if err != nil {
		return "", err
	}
	return suite.PromiseTable(locks), nil
}

// remedyTable: the safety options the cards cover, and the properties each
// is expected to win.
func remedyTable(context.Context) (string, error) {
	var b strings.Builder
	b.WriteString("| lock with the option on | property | expected | why |\n|---|---|---|---|\n")
	for _, l := range suite.RemedyLocks() {
		for _, p := range slices.Sorted(maps.Keys(suite.Remedies[l])) {
			fmt.Fprintf(&b, "| %s | %s | held | %s |\n", cell(l), p, cell(suite.Remedies[l][p]))
		}
	}
	return b.String(), nil
}

// lockTable: every shipped lock, what it needs and claims, where it comes
// from and its version.
func lockTable(ctx context.Context) (string, error) {
	locks, err := shipped(ctx)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("| lock | needs | claims | options | version | source | what it promises |\n|---|---|---|---|---|---|---|\n")
	for _, i := range locks {
		version := i.Version
		if version == "" {
			version = "lockfault's own"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", i.Name, i.Needs, orDash(strings.Join(i.Caps, ", ")),
			orDash(strings.Join(i.Options, ", ")), cell(version), cell(i.Source), cell(i.Promises))
	}
	return b.String(), nil
}

// faultTable: every fault, its target and parameters.
func faultTable(context.Context) (string, error) {
	var b strings.Builder
	b.WriteString("| fault | target | params | what it does |\n|---|---|---|---|\n")
	for _, f := range faults.All() {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", f.Name, f.Targets, orDash(strings.Join(f.Params, ", ")), cell(f.Description))
	}
	return b.String(), nil
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}
