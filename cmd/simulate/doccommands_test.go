package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/lockfault/lockfault/runner"
)

// TestDocumentedCommandsParse takes every `simulate …` line of the
// README and docs/ and parses it with `-h` added after its flags: a flag the
// subcommand does not have (a page that fell behind the code) is exit 2
// instead of the help. Nothing is run.
func TestDocumentedCommandsParse(t *testing.T) {
	pages, _ := filepath.Glob("../../docs/*.md")
	pages = append(pages, "../../README.md")
	n := 0
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for line, cmd := range documentedCommands(data) {
			args, err := runner.SplitCommand(placeholder.ReplaceAllString(cmd, "x"))
			if err != nil || len(args) < 2 {
				t.Errorf("%s:%d: %q: %v", page, line, cmd, err)
				continue
			}
			args = args[1:] // the subcommand and its arguments
			at := len(args)
			if i := slices.Index(args, "--"); i >= 0 {
				at = i
			}
			args = slices.Insert(args, at, "-h")
			var stdout, stderr bytes.Buffer
			if code := realMain(args, &stdout, &stderr); code != 0 || !strings.HasPrefix(stdout.String(), "usage: simulate "+args[0]) {
				t.Errorf("%s:%d: %s\n  exit %d: %s", filepath.Base(page), line, cmd, code, strings.TrimSpace(stderr.String()))
			}
			n++
		}
	}
	if n < 10 {
		t.Fatalf("found %d documented commands; the pattern no longer matches the pages", n)
	}
}

// placeholder is a page's <run-id>, <scenario>: a word to the parser.
var placeholder = regexp.MustCompile(`<[a-z-]+>`)

// documentedCommands are the lines of a page's code blocks that run
// simulate (or ./bin/simulate), continuation lines joined and trailing comments cut, by
// the line they start on.
func documentedCommands(page []byte) map[int]string {
	out := map[int]string{}
	sc := bufio.NewScanner(bytes.NewReader(page))
	inBlock, start, cur := false, 0, ""
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inBlock = !inBlock
			continue
		}
		if !inBlock {
			continue
		}
		if cur == "" {
			s := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "$ "))
			s = strings.TrimPrefix(s, "./bin/")
			if !strings.HasPrefix(s, "simulate ") {
				continue
			}
			start, l = n, s
		}
		if i := strings.Index(l, "  #"); i >= 0 {
			l = l[:i]
		}
		l = strings.TrimSpace(l)
		if strings.HasSuffix(l, `\`) {
			cur += strings.TrimSuffix(l, `\`) + " "
			continue
		}
		out[start] = strings.TrimSpace(cur + l)
		cur = ""
	}
	return out
}
