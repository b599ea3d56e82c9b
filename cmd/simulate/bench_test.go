package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockfault/lockfault/history"
)

// Whole-process benchmarks: `simulate check` and `simulate report` on a
// generated report folder of about 1M events over 64 keys (125k critical
// sections, with one lost update on one key). They report the wall time,
// the child's peak RSS and, for report, the size of linearizability.html.
//
//	go test -run '^$' -bench Simulate -benchtime 1x ./cmd/simulate/

var (
	benchOnce sync.Once
	benchBin  string
	benchDir  string
	benchErr  error
)

func benchFolder(b *testing.B) (bin, dir string) {
	benchOnce.Do(func() {
		root, err := os.MkdirTemp("", "lockfault-bench-")
		if err != nil {
			benchErr = err
			return
		}
		benchBin = filepath.Join(root, "simulate")
		if out, err := exec.Command("go", "build", "-o", benchBin, ".").CombinedOutput(); err != nil {
			benchErr = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		benchDir = filepath.Join(root, "bench-1m", "run")
		os.MkdirAll(benchDir, 0o755)
		benchErr = writeBenchHistory(filepath.Join(benchDir, "history.jsonl"), 64, 125_000)
		meta := `{"meta":{"scenario":"bench-1m","lock":"single","backend":"process","run_id":"run","expect":["overlap","corruption"]}}`
		if err := os.WriteFile(filepath.Join(benchDir, "report.json"), []byte(meta), 0o644); err != nil {
			benchErr = err
		}
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	b.Cleanup(func() {}) // the folder is removed by TestMain
	return benchBin, benchDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchBin != "" {
		os.RemoveAll(filepath.Dir(benchBin))
	}
	os.Exit(code)
}

// writeBenchHistory writes sections critical sections spread over keys
// keys, each section 8 events (acquire, cs, read, write, release), keys
// running side by side in time, and one lost update in the middle.
func writeBenchHistory(path string, keys, sections int) error {
	const ms = int64(time.Millisecond)
	var evs []history.Event
	val := make([]int64, keys)
	op := int64(0)
	lost := sections / 2
	for i := 0; i < sections; i++ {
		k := i % keys
		key := fmt.Sprintf("key%02d", k)
		t := int64(1e9) + int64(i)*ms // a new section every ms; each key every 64 ms
		p := fmt.Sprintf("c%d", 1+(i/keys)%8)
		lease := fmt.Sprintf("%s-%d", p, i)
		v := val[k]
		op++
		evs = append(evs,
			history.Event{Time: t, Kind: history.Invoke, Process: p, Op: history.OpAcquire, OpID: op, Key: key},
			history.Event{Time: t + ms, Kind: history.OK, Process: p, Op: history.OpAcquire, OpID: op, Key: key, Lease: lease, ValidUntil: t + 31*ms, Fence: int64(i + 1)})
		op++
		readAt, writeAt := t+2*ms, t+3*ms
		if i == lost {
			// The holder pauses past its lease; the next section on the key
			// (64 ms later) reads the same value: its increment is lost.
			writeAt = t + 70*ms
		}
		evs = append(evs,
			history.Event{Time: readAt - 100, Kind: history.Invoke, Process: p, Op: history.OpCS, OpID: op, Key: key, Lease: lease},
			history.Event{Time: readAt, Kind: history.Access, Process: p, Lease: lease, Key: key, Access: "read", Value: history.Int64(v)},
			history.Event{Time: writeAt, Kind: history.Access, Process: p, Lease: lease, Key: key, Access: "write", Value: history.Int64(v + 1)},
			history.Event{Time: writeAt + 100, Kind: history.OK, Process: p, Op: history.OpCS, OpID: op, Key: key, Lease: lease, Read: history.Int64(v), Wrote: history.Int64(v + 1)})
		if i != lost {
			val[k] = v + 1
		}
		op++
		evs = append(evs,
			history.Event{Time: t + 4*ms, Kind: history.Invoke, Process: p, Op: history.OpRelease, OpID: op, Key: key, Lease: lease},
			history.Event{Time: t + 4*ms + 100, Kind: history.OK, Process: p, Op: history.OpRelease, OpID: op, Key: key, Lease: lease})
	}
	history.SortByTime(evs)
	w, err := history.Create(path)
	if err != nil {
		return err
	}
	for _, e := range evs {
		w.Append(e)
	}
	return w.Close()
}

func runBench(b *testing.B, which string) {
	bin, dir := benchFolder(b)
	var maxRSS int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cmd := exec.Command(bin, which, dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("simulate %s: %v\n%s", which, err, out)
		}
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			maxRSS = max(maxRSS, ru.Maxrss) // KiB on Linux
		}
	}
	b.StopTimer()
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "wall-s")
	b.ReportMetric(float64(maxRSS)/1024, "peak-RSS-MiB")
	if which == "report" {
		if st, err := os.Stat(filepath.Join(dir, "linearizability.html")); err == nil {
			b.ReportMetric(float64(st.Size())/1e6, "html-MB")
		}
	}
}

func BenchmarkSimulateCheck1M(b *testing.B)  { runBench(b, "check") }
func BenchmarkSimulateReport1M(b *testing.B) { runBench(b, "report") }
