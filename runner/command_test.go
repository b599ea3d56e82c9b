package runner

import (
	"reflect"
	"testing"
)

func TestSplitCommandLikeAShell(t *testing.T) {
	cases := map[string][]string{
		`/usr/bin/python3 worker.py`:                {"/usr/bin/python3", "worker.py"},
		`  python3   -u  w.py  `:                    {"python3", "-u", "w.py"},
		`node 'my worker.js' --name="a b"`:          {"node", "my worker.js", "--name=a b"},
		`java -jar a\ b.jar`:                        {"java", "-jar", "a b.jar"},
		`sh -c 'echo $HOME | cat'`:                  {"sh", "-c", "echo $HOME | cat"},
		`x "say \"hi\" \\ \$" ''`:                   {"x", `say "hi" \ $`, ""},
		`a"b"'c'd`:                                  {"abcd"},
		`w --path=~/x a#b`:                          {"w", "--path=~/x", "a#b"},
		"python3 \\\n  worker.py":                   {"python3", "worker.py"},
		`ruby -e "puts 'single quotes inside'" end`: {"ruby", "-e", "puts 'single quotes inside'", "end"},
	}
	for in, want := range cases {
		got, err := SplitCommand(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("SplitCommand(%q) = %q, %v; want %q", in, got, err, want)
		}
		if err == nil {
			again, err := SplitCommand(JoinCommand(got))
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Errorf("JoinCommand(%q) = %q does not split back: %q, %v", got, JoinCommand(got), again, err)
			}
		}
	}
	for _, bad := range []string{``, `   `, `a 'b`, `a "b`, `a \`, `a | b`, `a; b`, `a && b`, `a > f`, `a < f`, `$X`, "a `b`", `a "$X"`, `*.py`, `~/w`, `# c`, `(a)`} {
		if got, err := SplitCommand(bad); err == nil {
			t.Errorf("SplitCommand(%q) = %q, want an error", bad, got)
		}
	}
}
