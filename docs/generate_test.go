package docs

import (
	"context"
	"flag"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the generated sections of docs/*.md")

// The tables in docs/ are what the code says: a page that differs fails,
// and `go test ./docs -update` (make docs) rewrites it.
func TestGeneratedDocsAreCurrent(t *testing.T) {
	stale, err := Update(context.Background(), ".", *update)
	if err != nil {
		t.Fatal(err)
	}
	if len(stale) > 0 && !*update {
		t.Errorf("generated sections are stale (run make docs): %v", stale)
	}
}
