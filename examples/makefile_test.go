package examples

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// notCarded are the workers make cards leaves out on purpose; the
// Makefile names each beside its WORKERS with the reason.
// (none today: the PHP cluster workers, once left out because phpredis
// cannot remap the announced addresses, run under the connect remap).
var notCarded = map[string]string{}

// TestMakeCardsPassesEveryWorkerWhole runs the Makefile's cards recipe with
// the binary replaced by a script that prints its arguments, and checks that
// every worker of this package reaches `simulate cards` as one -worker
// argument holding its whole command. (The recipe once split each command
// into words: `-worker /usr/bin/python3 -worker examples/…`, and make cards
// stopped at the first worker.)
func TestMakeCardsPassesEveryWorkerWhole(t *testing.T) {
	// Every worker but those left out on purpose (notCarded).
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make here:", err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "args.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nprintf '%s\\n' \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(root, script)
	if err != nil {
		t.Fatal(err)
	}
	// -o build, -o image, -o debs-*: the recipe alone, nothing built or installed.
	cmd := exec.Command("make", "-s", "-o", "build", "-o", "image", "-o", "debs-servers", "-o", "debs-python", "-o", "debs-php", "cards", "BIN="+rel, "ARGS=")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make cards: %v", err)
	}
	args := strings.Split(strings.TrimSpace(string(out)), "\n")
	var got []string
	for i, a := range args {
		if a == "-worker" && i+1 < len(args) {
			got = append(got, args[i+1])
		}
	}
	var want []string
	for _, w := range workers {
		if _, left := notCarded[w.argv[1]]; !left {
			want = append(want, w.argv[0]+" examples/"+w.argv[1])
		}
	}
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for w := range notCarded {
		if !strings.Contains(string(makefile), "Not carded yet") || !strings.Contains(string(makefile), "examples/"+w) {
			t.Errorf("make cards leaves out examples/%s, and the Makefile does not say why", w)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("make cards passes these workers:\n  %s\nwant every worker of examples/, each whole:\n  %s",
			strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	// Every library's regressions (docs/FINDINGS.md) reach the cards.
	regs, err := filepath.Glob(filepath.Join(root, "examples", "*", "regressions"))
	if err != nil || len(regs) == 0 {
		t.Fatalf("no examples/*/regressions: %v", err)
	}
	regs = append(regs, filepath.Join(root, "adapters", "golibs", "regressions")) // the Go libraries'
	i := slices.Index(args, "-extra")
	for _, r := range regs {
		rel, _ := filepath.Rel(root, r)
		if i < 0 || i+1 >= len(args) || !slices.Contains(strings.Split(args[i+1], ","), rel) {
			t.Errorf("make cards does not pass %s with -extra: %q", rel, args)
		}
	}
}

// TestAptNeedSaysWhatAndWhy: .ci/apt-need, which every make target installs
// its Debian packages through, installs only the missing ones, saying so in
// one line with the reason, and runs apt not at all when none is missing.
// dpkg-query and apt-get are stand-ins: nothing is installed.
func TestAptNeedSaysWhatAndWhy(t *testing.T) {
	bin := t.TempDir()
	log := filepath.Join(bin, "apt.log")
	stub := map[string]string{
		// redis-server is installed, the rest are not.
		"dpkg-query": "#!/bin/sh\nfor p; do :; done\n[ \"$p\" = redis-server ] && echo 'install ok installed'\nexit 0\n",
		"apt-get":    "#!/bin/sh\necho \"apt-get $*\" >> " + log + "\n",
	}
	for name, text := range stub {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) string {
		cmd := exec.Command("bash", append([]string{"../.ci/apt-need"}, args...)...)
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("apt-need %v: %v", args, err)
		}
		return string(out)
	}
	if out := run("scenario sentinel-failover runs them", "redis-server", "redis-sentinel"); out != "installing redis-sentinel: scenario sentinel-failover runs them\n" {
		t.Errorf("one package missing: %q", out)
	}
	apt, _ := os.ReadFile(log)
	if !strings.Contains(string(apt), "apt-get install -y -qq redis-sentinel\n") || strings.Contains(string(apt), "redis-server") {
		t.Errorf("apt-get ran as:\n%s", apt)
	}
	os.Remove(log)
	if out := run("why", "redis-server"); out != "" {
		t.Errorf("nothing missing, yet: %q", out)
	}
	if _, err := os.Stat(log); err == nil {
		t.Error("apt-get ran with nothing missing")
	}
}
