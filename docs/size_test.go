package docs

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Size guards of the house (issue 33): they count, they do not time.
const (
	// maxMethods is the most methods one type of package runner may have:
	// a run is made of parts (recorder, clients, nemesis, quiescer, ...),
	// not one type that does everything.
	maxMethods = 15
	// maxFuncLines is the most lines a function of the main module's
	// non-test code may span, from its func line to its closing brace.
	maxFuncLines = 80
)

// longAllowed names the functions allowed over maxFuncLines ("dir/file.go
// Recv.Name"), each with the reason it cannot be split. Keep it empty.
var longAllowed = map[string]string{}

// methodsPerType counts the methods declared on each type of the non-test
// files of the package in dir.
func methodsPerType(dir string) (map[string]int, error) {
	files, err := goFiles(dir, false)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	fset := token.NewFileSet()
	for _, f := range files {
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			return nil, err
		}
		for _, d := range af.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv != nil {
				out[recvName(fd)]++
			}
		}
	}
	return out, nil
}

// goFiles lists the .go files directly in dir (test files only if tests).
func goFiles(dir string, tests bool) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") != tests {
			continue
		}
		out = append(out, filepath.Join(dir, n))
	}
	return out, nil
}

func recvName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return ""
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return "?"
}

// longFuncs lists the functions of the .go files under root (tests: the
// test files instead of the others) that span more than max lines, as
// "dir/file.go Recv.Name: N lines". Nested modules (a folder with its own
// go.mod), testdata, and folders the go tool ignores are not the module's
// code.
func longFuncs(root string, tests bool, max int) ([]string, error) {
	var out []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p == root {
				return nil
			}
			// What the go tool ignores too (build/_clock is a generated copy
			// of the standard library's time package).
			if n := d.Name(); n == "testdata" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") || n == "node_modules" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") != tests {
			return nil
		}
		af, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		for _, d := range af.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			n := fset.Position(fd.Body.Rbrace).Line - fset.Position(fd.Pos()).Line + 1
			if n <= max {
				continue
			}
			name := fd.Name.Name
			if r := recvName(fd); r != "" {
				name = r + "." + name
			}
			out = append(out, fmt.Sprintf("%s %s: %d lines", filepath.ToSlash(rel), name, n))
		}
		return nil
	})
	return out, err
}

func TestRunnerTypesHaveFewMethods(t *testing.T) {
	counts, err := methodsPerType("../runner")
	if err != nil {
		t.Fatal(err)
	}
	if len(counts) == 0 {
		t.Fatal("no methods found in ../runner: the count counts nothing")
	}
	for typ, n := range counts {
		if n > maxMethods {
			t.Errorf("runner.%s has %d methods (allowed: at most %d): split it along a seam into a part of its own, in a file named for it", typ, n, maxMethods)
		}
	}
}

func TestNoLongFunctions(t *testing.T) {
	long, err := longFuncs("..", false, maxFuncLines)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range long {
		if _, ok := longAllowed[strings.SplitN(l, ":", 2)[0]]; ok {
			continue
		}
		t.Errorf("%s (allowed: at most %d): split it into helpers named for what they do", l, maxFuncLines)
	}
}

// The counts can fail: a type with one method too many and a function one
// line too long are found, and their neighbours at the bound are not.
func TestSizeGuardsCanFail(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("package p\n\ntype big struct{}\ntype ok struct{}\n\n")
	for i := range maxMethods + 1 {
		fmt.Fprintf(&b, "func (*big) m%d() {}\n", i)
	}
	for i := range maxMethods {
		fmt.Fprintf(&b, "func (ok) m%d() {}\n", i)
	}
	body := func(name string, lines int) string { // lines in all, func line and brace included
		return "func " + name + "() {\n" + strings.Repeat("\t_ = 0\n", lines-2) + "}\n"
	}
	b.WriteString(body("long", maxFuncLines+1))
	b.WriteString(body("atBound", maxFuncLines))
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	counts, err := methodsPerType(dir)
	if err != nil {
		t.Fatal(err)
	}
	if counts["big"] != maxMethods+1 || counts["ok"] != maxMethods {
		t.Errorf("methods counted %v, want big %d and ok %d", counts, maxMethods+1, maxMethods)
	}
	long, err := longFuncs(dir, false, maxFuncLines)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{fmt.Sprintf("p.go long: %d lines", maxFuncLines+1)}
	if !slices.Equal(long, want) {
		t.Errorf("long functions %q, want %q", long, want)
	}
}
