package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goFence is a Go code block of a Markdown page.
var goFence = regexp.MustCompile("(?s)```go\n(.*?)```")

// exported lists the exported top-level names of the package in dir, with
// each function's parameter count (-1: not a function, or variadic).
func exported(t *testing.T, dir string) map[string]int {
	files, err := goFiles(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for n, obj := range f.Scope.Objects {
			if !ast.IsExported(n) {
				continue
			}
			out[n] = -1
			if fd, ok := obj.Decl.(*ast.FuncDecl); ok && fd.Recv == nil {
				out[n] = paramCount(fd.Type)
			}
		}
	}
	return out
}

func paramCount(ft *ast.FuncType) int {
	n := 0
	for _, p := range ft.Params.List {
		if _, variadic := p.Type.(*ast.Ellipsis); variadic {
			return -1
		}
		n += max(1, len(p.Names))
	}
	return n
}

// snippetProblems checks a snippet's uses of package pkg against its
// exported names: each named thing exists, each call of one of its
// functions passes as many arguments as it takes (when the snippet parses
// as a file's declarations).
func snippetProblems(pkg, snippet string, api map[string]int) []string {
	var out []string
	for _, m := range regexp.MustCompile(`\b`+pkg+`\.([A-Za-z_]\w*)`).FindAllStringSubmatch(snippet, -1) {
		if _, ok := api[m[1]]; !ok {
			out = append(out, pkg+"."+m[1]+" does not exist")
		}
	}
	src := snippet
	if !strings.HasPrefix(strings.TrimSpace(src), "package ") {
		src = "package snippet\n" + src
	}
	f, err := parser.ParseFile(token.NewFileSet(), "snippet.go", src, 0)
	if err != nil {
		return out
	}
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if id, ok := sel.X.(*ast.Ident); ok && id.Name == pkg {
			if want, ok := api[sel.Sel.Name]; ok && want >= 0 && want != len(call.Args) {
				out = append(out, pkg+"."+sel.Sel.Name+" called with the wrong number of arguments")
			}
		}
		return true
	})
	return out
}

// The Go snippets of README and docs/ that use lockfaulttest (the API a
// user copies) name what the package has, called as it takes it.
func TestSnippetsUseTheRealAPI(t *testing.T) {
	api := exported(t, filepath.Join("..", "lockfaulttest"))
	pages, _ := filepath.Glob("*.md")
	pages = append(pages, filepath.Join("..", "README.md"))
	checked := 0
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range goFence.FindAllStringSubmatch(string(b), -1) {
			if !strings.Contains(m[1], "lockfaulttest.") {
				continue
			}
			checked++
			for _, p := range snippetProblems("lockfaulttest", m[1], api) {
				t.Errorf("%s: a Go snippet: %s", page, p)
			}
		}
	}
	if checked < 2 {
		t.Errorf("%d snippets using lockfaulttest found, want README's and SUITE.md's", checked)
	}
}

// The check catches a TestMain calling a Main the package does not have
// (docs/SUITE.md had one) and a call with too few arguments.
func TestSnippetCheckCanFail(t *testing.T) {
	api := exported(t, filepath.Join("..", "lockfaulttest"))
	old := `func TestMain(m *testing.M) {
	lockfaulttest.Main(m, lockfaulttest.LockDef{})
}

func TestMyLock(t *testing.T) { lockfaulttest.Run(t, "mylock") }
`
	got := strings.Join(snippetProblems("lockfaulttest", old, api), "; ")
	for _, want := range []string{"lockfaulttest.Main does not exist", "lockfaulttest.Run called with the wrong number of arguments"} {
		if !strings.Contains(got, want) {
			t.Errorf("problems %q lack %q", got, want)
		}
	}
}
