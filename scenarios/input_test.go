package scenarios

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// formRE: every refusal reads file:line: field: what (allowed: ...).
var formRE = regexp.MustCompile(`^bad\.yaml:[0-9]+: [a-z_.0-9()]+( [a-z]+)*: .*\(allowed: `)

// A scenario file is looked at before it is read: a FIFO (which would
// block a plain read for ever), a directory, a device or a file over
// MaxFileSize is refused, naming the path and what is allowed. (Before:
// os.ReadFile blocked on the FIFO, and read any size before Parse refused
// it.)
func TestLoadRefusesWhatIsNotAScenarioFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte(good+"#"+strings.Repeat("x", MaxFileSize)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub.yaml")
	os.Mkdir(sub, 0o755)
	cases := map[string]string{
		fifo:        fifo + ": not a regular file: a named pipe (FIFO) (allowed: a regular file)",
		sub:         sub + ": not a regular file: a directory (allowed: a regular file)",
		"/dev/zero": "/dev/zero: not a regular file: a character device (allowed: a regular file)",
		big:         big + ": too big: " + strconv.Itoa(len(good)+MaxFileSize+2) + " bytes or more (allowed: at most 1048576 bytes)",
	}
	for path, want := range cases {
		if _, err := Load(path); err == nil || err.Error() != want {
			t.Errorf("Load(%s): %v\nwant %s", path, err, want)
		}
	}
	ok := filepath.Join(dir, "ok.yaml")
	os.WriteFile(ok, []byte(good), 0o644)
	if _, err := Load(ok); err != nil {
		t.Fatalf("a regular scenario file: %v", err)
	}
}

// Every fault param is checked when the scenario loads, with the same
// bound on durations as every other field, and a restart delay counts
// toward the run's length. (Before: restart: 1000h, restart: -1s (read as
// never), latency: 1h and clients: c9 of 2 clients were all accepted by
// Parse; a 10-minute restart in each of 1000 cycles passed the 24 h bound.)
func TestFaultParamsCheckedAtLoad(t *testing.T) {
	step := func(s string) string { return strings.Replace(good, "- {sleep: 1s}", s, 1) }
	cases := []struct{ name, src, want string }{
		{"restart 1000h", step("- {fault: kill, target: n1, params: {restart: 1000h}}"),
			"bad.yaml:14: nemesis.steps.1.params: param restart: 1000h0m0s is out of range (allowed: 0s to 10m0s, or never"},
		{"restart -1s", step("- {fault: kill, target: n1, params: {restart: -1s}}"),
			"bad.yaml:14: nemesis.steps.1.params: param restart: -1s is out of range (allowed: 0s to 10m0s, or never"},
		{"power-loss restart -1s", step("- {fault: power-loss, target: n1, params: {restart: -1s}}"),
			"bad.yaml:14: nemesis.steps.1.params: param restart: -1s is out of range"},
		{"latency 1h", step("- {fault: latency, target: n1, params: {latency: 1h}}"),
			"bad.yaml:14: nemesis.steps.1.params: param latency: 1h0m0s is out of range (allowed: 1ms to 10m0s"},
		{"within 1h", step("- {fault: sentinel-failover, params: {within: 1h}}"),
			"bad.yaml:14: nemesis.steps.1.params: param within: 1h0m0s is out of range (allowed: 1ms to 10m0s"},
		{"clients of another workload", step("- {fault: latency, target: n1, params: {latency: 5ms, clients: c9}}"),
			`bad.yaml:14: nemesis.steps.1.params: param clients: "c9" is not a client of this workload (allowed: c1 to c2, holder, others, all)`},
		{"unknown param", step("- {fault: kill, target: n1, params: {colour: red}}"),
			`bad.yaml:14: nemesis.steps.1.params: fault kill has no param "colour" (allowed: restart)`},
		{"unknown fault", step("- {fault: teleport, target: n1}"),
			`bad.yaml:14: nemesis.steps.1.fault: unknown fault "teleport" (known: `},
		{"unknown random fault", strings.Replace(good, "  steps:\n    - quiesce\n    - {sleep: 1s}\n    - resume\n",
			"  random:\n    faults: [kill, teleport]\n    interval: 1s\n    for: 1s\n", 1),
			`bad.yaml:13: nemesis.random.faults.1: unknown fault "teleport"`},
		{"restart counts toward the run", strings.Replace(step("- {fault: kill, target: n1, params: {restart: 10m}}"), "cycles: 2", "cycles: 150", 1),
			"bad.yaml:11: nemesis.cycles: 150 cycles of this schedule take up to 25h0m0s (allowed: at most 24h0m0s in all)"},
	}
	for _, c := range cases {
		_, err := Parse("bad.yaml", []byte(c.src))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: got %v\nwant %s", c.name, err, c.want)
		}
	}
	for _, ok := range []string{
		"- {fault: kill, target: n1, params: {restart: never}}",
		"- {fault: kill, target: n1, params: {restart: 10m}}",
		"- {fault: power-loss, target: n1, params: {restart: never}}",
		"- {fault: latency, target: n1, params: {latency: 10m, clients: c2}}",
	} {
		if _, err := Parse("ok.yaml", []byte(step(ok))); err != nil {
			t.Errorf("%s: refused: %v", ok, err)
		}
	}
	s, err := Parse("ok.yaml", []byte(step("- {fault: kill, target: n1, params: {restart: 10m}, for: 1s}")))
	if err != nil {
		t.Fatal(err)
	}
	if d, want := s.ScheduledTime(), 2*(10*time.Minute+time.Second); d != want {
		t.Fatalf("ScheduledTime = %v, want %v (2 cycles of the restart delay and the for)", d, want)
	}
}

// Name-like fields are bounded and refuse control characters, Unicode
// bidirectional overrides and other format characters, naming the field and
// the code point; a key with one is refused before it is printed. Free text
// (description) may have new lines and tabs, not the rest. (Before: every
// one of these was accepted.)
func TestTextFieldsAreBoundedAndPrintable(t *testing.T) {
	long := strings.Repeat("n", MaxNameLen+1)
	cases := []struct{ name, from, to, want string }{
		{"name too long", "name: x", "name: " + long, "bad.yaml:1: name: 65 characters (allowed: at most 64)"},
		{"name with a bidi override", "name: x", `name: "x\u202Ey"`, "bad.yaml:1: name: contains bidirectional override U+202E at character 2 (allowed: printable text; no control or format character)"},
		{"name with an isolate", "name: x", `name: "x\u2066"`, "bad.yaml:1: name: contains bidirectional override U+2066 at character 2"},
		{"name with a zero-width joiner", "name: x", `name: "x\u200Dy"`, "bad.yaml:1: name: contains format character U+200D at character 2"},
		{"name with a bell", "name: x", `name: "x\a"`, "bad.yaml:1: name: contains control character U+0007 at character 2"},
		{"lock name", "name: single", `name: "sin\u202Egle"`, "bad.yaml:5: lock.name: contains bidirectional override U+202E at character 4"},
		{"lock name too long", "name: single", "name: " + long, "bad.yaml:5: lock.name: 65 characters (allowed: at most 64)"},
		{"option key", "ttl: 1s", "ttl: 1s\n  options: {\"a\\u202Eb\": x}", "bad.yaml:7: lock.options: a key that contains bidirectional override U+202E at character 2"},
		{"option value", "ttl: 1s", "ttl: 1s\n  options: {lease: \"1s\\u2069\"}", "bad.yaml:7: lock.options.lease: contains bidirectional override U+2069 at character 3"},
		{"option value too long", "ttl: 1s", "ttl: 1s\n  options: {lease: " + strings.Repeat("v", MaxValueLen+1) + "}", "bad.yaml:7: lock.options.lease: 257 characters (allowed: at most 256)"},
		{"resource", "hold: 10ms", "hold: 10ms\n  resource: \"ord\\u202Aer\"", "bad.yaml:10: workload.resource: contains bidirectional override U+202A at character 4"},
		{"resource too long", "hold: 10ms", "hold: 10ms\n  resource: " + strings.Repeat("r", MaxResourceLen+1), "bad.yaml:10: workload.resource: 129 characters (allowed: at most 128)"},
		{"description", "name: x", "name: x\ndescription: \"fine\\nlines\\tand \\u202Ehidden\"", "bad.yaml:2: description: contains bidirectional override U+202E at character 16 (allowed: printable text, new lines and tabs"},
		{"description too long", "name: x", "name: x\ndescription: " + strings.Repeat("d", MaxDescriptionLen+1), "bad.yaml:2: description: 4097 characters (allowed: at most 4096)"},
		{"claim", "name: x", "name: x\nclaim: \"C1\\u0000\"", "bad.yaml:2: claim: contains control character U+0000 at character 3"},
		{"target", "- {sleep: 1s}", `- {fault: pause-client, target: "c1\u202E"}`, "bad.yaml:14: nemesis.steps.1.target: contains bidirectional override U+202E at character 3"},
		{"by", "- {sleep: 1s}", `- {await: grant, by: "c1\u2067"}`, "bad.yaml:14: nemesis.steps.1.by: contains bidirectional override U+2067 at character 3"},
		{"param value", "- {sleep: 1s}", `- {fault: failpoint, target: c1, params: {name: "after\u202Esetnx", action: crash}}`, "bad.yaml:14: nemesis.steps.1.params.name: contains bidirectional override U+202E at character 6"},
		{"param key", "- {sleep: 1s}", `- {fault: kill, target: n1, params: {"re\u202Estart": 1s}}`, "bad.yaml:14: nemesis.steps.1.params: a key that contains bidirectional override U+202E at character 3"},
		{"unknown field with a bidi override", "name: x", "name: x\n\"nam\\u202Ee\": y", "bad.yaml:2: (top level): a key that contains bidirectional override U+202E at character 4"},
		{"key too long", "name: x", "name: x\n" + long + ": y", "bad.yaml:2: (top level): a key of 65 characters (allowed: at most 64)"},
		{"line separator", "name: x", `name: "x\u2028y"`, "bad.yaml:1: name: contains line separator U+2028 at character 2"},
		{"variant name", "expect: [safe]\n", "expect: [safe]\nvariants:\n  - name: \"v\\u202E\"\n    lock: {name: single}\n", "bad.yaml:18: variants.0.name: contains bidirectional override U+202E at character 2"},
		{"random target", "  steps:\n    - quiesce\n    - {sleep: 1s}\n    - resume\n", "  random:\n    faults: [kill]\n    targets: [\"n1\\u202E\"]\n    interval: 1s\n    for: 1s\n", "bad.yaml:14: nemesis.random.targets.0: contains bidirectional override U+202E at character 3"},
	}
	for _, c := range cases {
		src := strings.Replace(good, c.from, c.to, 1)
		if src == good {
			t.Fatalf("%s: case did not change the input", c.name)
		}
		_, err := Parse("bad.yaml", []byte(src))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: got %v\nwant %s", c.name, err, c.want)
			continue
		}
		if strings.ContainsAny(err.Error(), "\u202A\u202B\u202C\u202D\u202E\u2066\u2067\u2068\u2069\u200D\u2028\a\x00") {
			t.Errorf("%s: the message carries the character itself: %q", c.name, err)
		}
	}
	// Free text keeps its new lines and tabs; names may be any printable
	// text of any script.
	ok := strings.Replace(good, "name: x", "name: zürich-ロック\ndescription: \"two\\nlines\\tand a tab\"", 1)
	if _, err := Parse("ok.yaml", []byte(ok)); err != nil {
		t.Fatalf("printable text refused: %v", err)
	}
}

// Every refusal the new checks make has the form file:line: field: what
// (allowed: ...).
func TestNewRefusalsHaveTheForm(t *testing.T) {
	for _, src := range []string{
		strings.Replace(good, "- {sleep: 1s}", "- {fault: kill, target: n1, params: {restart: 1000h}}", 1),
		strings.Replace(good, "name: x", `name: "x\u202E"`, 1),
		strings.Replace(good, "name: x", "name: "+strings.Repeat("n", 99), 1),
	} {
		_, err := Parse("bad.yaml", []byte(src))
		if err == nil || !formRE.MatchString(err.Error()) {
			t.Errorf("%v: not of the form file:line: field: what (allowed: ...)", err)
		}
	}
}
