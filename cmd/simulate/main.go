// Command simulate is lockfault's command line: it parses flags, calls one
// function of the package that does the work, prints what it returns and
// exits with its code. Run a scenario, re-check or re-report a recorded
// history, run the property suite or the claims catalogue, list what there
// is, and clean up what a killed run left behind.
package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	// Linked for their side effect: the Docker backend (package cluster
	// runs local processes without it), and the pictures (timeline.png,
	// suite.png, cards.png, claims.png: the report writers draw them only
	// when package plots is linked).
	_ "github.com/lockfault/lockfault/cluster/docker"
	_ "github.com/lockfault/lockfault/plots"
	"github.com/lockfault/lockfault/worker"
)

// command is one subcommand: its name, a line of help, and its function.
type command struct {
	name, args, help string
	run              func(args []string, stdout, stderr io.Writer) int
}

var commands = []command{
	{"run", "<scenario|file.yaml>", "run a scenario; exit 0 if the verdict matched, 1 if not, 2 if the harness failed (-worker 'COMMAND ...': your own lock through an external worker)", cmdRun},
	{"check", "<report-dir>", "re-check a recorded history.jsonl and print the verdict; exit 2 if it cannot be judged (unknown)", cmdCheck},
	{"report", "<report-dir>", "re-check and rewrite the report files from history.jsonl (same exit codes as check)", cmdReport},
	{"suite", "-lock NAME | -worker CMD", "the property suite against one lock: its report card, junit.xml, a baseline gate", cmdSuite},
	{"hunt", "-lock NAME | -worker CMD", "random schedules until a violation (or the budget: -runs, -time); each finding shrunk to a minimal scenario with its reproduction rate", cmdHunt},
	{"cards", "[-locks a,b]", "the suite against several locks: each card and a lock × property table (cards.md, cards.png)", cmdCards},
	{"claims", "", "the whole catalogue (every claim, every variant): claims.md and claims.png", cmdClaims},
	{"campaign", "-def FILE | -locks ...", "many runs: locks × properties, scenarios or hunt seeds × repetitions, as rates; -shard i/N runs a slice; -emit k8s", cmdCampaign},
	{"merge", "SHARD-DIR...", "combine a campaign's shards into one result (campaign.json, campaign.md, junit.xml)", cmdMerge},
	{"serve", "[reports-dir]", "serve the reports folder's index.html on loopback", cmdServe},
	{"worker-check", "-worker CMD", "hold a worker to every rule of the worker protocol (docs/PROTOCOL.md)", cmdWorkerCheck},
	{"list", "", "list scenarios, locks and faults", cmdList},
	{"clean", "", "remove containers, networks and temp dirs left by killed runs (only lockfault's own)", cmdClean},
}

func usage(w io.Writer) {
	fmt.Fprint(w, "usage: simulate <command> [flags]   (simulate <command> -h: its flags)\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %-26s %s\n", c.name, c.args, c.help)
	}
}

func main() {
	if worker.IsWorker() {
		worker.Main()
		return
	}
	// A closed stdout (`simulate run … | head -3`) must not kill the harness
	// mid-run with SIGPIPE, which would leave its nodes' temp dir behind: with
	// a handler installed, writes to the closed pipe fail with EPIPE instead
	// and the run finishes and cleans up. (A handler, not signal.Ignore: an
	// ignored signal would stay ignored in every node and worker started.)
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

func realMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "--help", "help":
		usage(stdout)
		return 0
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "simulate: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}
