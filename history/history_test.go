package history

import (
	"bufio"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestWriterIsFlushedAndConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				w.Append(Event{Kind: Note, Op: "x"})
			}
		}()
	}
	wg.Wait()
	// Before Close: everything is already on disk (a crashed harness
	// leaves a readable history).
	evs, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 800 {
		t.Fatalf("read %d events before close, want 800", len(evs))
	}
	seen := map[int64]bool{}
	for _, e := range evs {
		if seen[e.Seq] || e.Time == 0 {
			t.Fatalf("bad event %+v", e)
		}
		seen[e.Seq] = true
	}
	w.Close()
}

// A torn last line (no newline: the writer was cut short) means the history
// is incomplete: it is refused at its line, like any malformed line. (It
// used to be dropped, and the rest judged as if complete.)
func TestReadRefusesATornLastLine(t *testing.T) {
	dir := t.TempDir()
	good := `{"seq":1,"t":5,"kind":"note"}` + "\n" + `{"seq":2,"t":6,"kind":"note"}` + "\n"
	for name, tail := range map[string]string{
		"half":  `{"seq":3,"t":7,"ki`,
		"whole": `{"seq":3,"t":7,"kind":"note"}`, // valid JSON, but its newline never made it
		"blank": "  ",
	} {
		torn := filepath.Join(dir, "torn.jsonl")
		os.WriteFile(torn, []byte(good+tail), 0o644)
		want := "torn.jsonl:3: newline: missing at the end of the last line"
		if evs, err := Read(torn); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: Read gave %d events, %v; want %s", name, len(evs), err, want)
		}
		if err := Scan(torn, func(Event) error { return nil }); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: Scan: %v; want %s", name, err, want)
		}
	}
	whole := filepath.Join(dir, "whole.jsonl")
	os.WriteFile(whole, []byte(good), 0o644)
	if evs, err := Read(whole); err != nil || len(evs) != 2 {
		t.Fatalf("the same history with its newline: %d events, %v", len(evs), err)
	}
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(`{"seq":1,"t":1,"kind":"note"}`+"\nnot json\n"+good), 0o644)
	if _, err := Read(bad); err == nil || !strings.Contains(err.Error(), "bad.jsonl:2:") {
		t.Fatalf("a malformed middle line must be an error naming line 2, got %v", err)
	}
	garbage := filepath.Join(dir, "garbage.jsonl")
	os.WriteFile(garbage, []byte("garbage\n"), 0o644)
	if _, err := Read(garbage); err == nil || !strings.Contains(err.Error(), "garbage.jsonl:1:") {
		t.Fatalf("a whole garbage line must be an error naming line 1, got %v", err)
	}
}

// Events the checker would have to guess about are errors naming the line
// and the field, never panics later.
func TestReadRejectsMalformedEvents(t *testing.T) {
	cases := map[string]string{
		`{"seq":1,"t":5,"kind":"access","access":"write","process":"c1"}`: "value: missing",
		`{"seq":1,"t":5,"kind":"access","access":"poke","value":1}`:       "access: \"poke\"",
		`{"seq":1,"t":5,"kind":"bogus"}`:                                  "kind: \"bogus\"",
		`{"seq":1,"t":5}`:                                                 "kind: missing",
		`{"seq":1,"t":-1,"kind":"note"}`:                                  "t: -1",
		`{"seq":1,"t":5,"kind":"ok"}`:                                     "op: missing",
		`{"seq":1,"t":5,"kind":"renew"}`:                                  "lease: missing",
		`{"seq":1,"t":5,"kind":"fault-start"}`:                            "fault: missing",
	}
	dir := t.TempDir()
	for line, want := range cases {
		p := filepath.Join(dir, "h.jsonl")
		os.WriteFile(p, []byte(`{"seq":1,"t":1,"kind":"note"}`+"\n"+line+"\n"), 0o644)
		_, err := Read(p)
		if err == nil || !strings.Contains(err.Error(), "h.jsonl:2: "+want) {
			t.Errorf("%s: got %v, want h.jsonl:2: %s", line, err, want)
		}
	}
	// A rejected access has no value: that is legal.
	p := filepath.Join(dir, "ok.jsonl")
	os.WriteFile(p, []byte(`{"seq":1,"t":5,"kind":"access","access":"write","rejected":true}`+"\n"), 0o644)
	if evs, err := Read(p); err != nil || len(evs) != 1 {
		t.Fatalf("rejected write: %v %v", evs, err)
	}
}

func TestReadOrdersByTimeAndKeepsKeys(t *testing.T) {
	p := filepath.Join(t.TempDir(), "h.jsonl")
	os.WriteFile(p, []byte(`{"seq":1,"t":9,"kind":"note","key":"a"}`+"\n"+`{"seq":2,"t":3,"kind":"note"}`+"\n"+`{"seq":3,"t":9,"kind":"note"}`+"\n"), 0o644)
	evs, err := Read(p)
	if err != nil || len(evs) != 3 || evs[0].Seq != 2 || evs[1].Seq != 1 || evs[2].Seq != 3 || evs[1].Key != "a" {
		t.Fatalf("got %+v %v", evs, err)
	}
}

// The writer keeps nothing in memory and hands every event to the OS before
// Append returns: a process killed with SIGKILL right after an Append
// leaves that event (and every earlier one) in the file.
func TestWriterSurvivesSIGKILL(t *testing.T) {
	if os.Getenv("LF_HISTORY_CHILD") != "" {
		w, err := Create(os.Getenv("LF_HISTORY_CHILD"))
		if err != nil {
			os.Exit(3)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					e := w.Append(Event{Kind: Note, Op: "x", Detail: strings.Repeat("d", 100)})
					mu.Lock()
					fmt.Printf("%d\n", e.Seq) // reported complete only now
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		return
	}
	path := filepath.Join(t.TempDir(), "history.jsonl")
	cmd := exec.Command(os.Args[0], "-test.run", "^TestWriterSurvivesSIGKILL$")
	cmd.Env = append(os.Environ(), "LF_HISTORY_CHILD="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	var reported []int64
	for sc.Scan() {
		n, err := strconv.ParseInt(sc.Text(), 10, 64)
		if err != nil {
			continue
		}
		reported = append(reported, n)
		if len(reported) == 2000 {
			cmd.Process.Signal(syscall.SIGKILL)
			break
		}
	}
	for sc.Scan() { // what the child printed before it died
		if n, err := strconv.ParseInt(sc.Text(), 10, 64); err == nil {
			reported = append(reported, n)
		}
	}
	cmd.Wait()
	if len(reported) < 2000 {
		t.Fatalf("child reported only %d events", len(reported))
	}
	// The kill may cut a write short: a torn last line, an event whose
	// Append never returned (Read refuses it: the history is incomplete).
	// Every event reported complete is in the whole lines before it.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if i := strings.LastIndexByte(string(data), '\n'); i+1 < len(data) {
		os.WriteFile(path, data[:i+1], 0o644)
	}
	evs, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	have := map[int64]bool{}
	for _, e := range evs {
		have[e.Seq] = true
	}
	for _, s := range reported {
		if !have[s] {
			t.Fatalf("event %d was reported complete but is not in the file (%d events there)", s, len(evs))
		}
	}
}

func TestNowIsMonotonic(t *testing.T) {
	a := Now()
	b := Now()
	if b < a || a <= 0 {
		t.Fatalf("Now went from %d to %d", a, b)
	}
}

func TestSortByTimeIsStable(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for n := 0; n < 200; n++ {
		evs := make([]Event, n)
		for i := range evs {
			evs[i] = Event{Seq: int64(i), Time: int64(rng.Intn(20))}
		}
		want := append([]Event(nil), evs...)
		sort.SliceStable(want, func(i, j int) bool { return want[i].Time < want[j].Time })
		SortByTime(evs)
		for i := range evs {
			if evs[i].Seq != want[i].Seq {
				t.Fatalf("n=%d: position %d has seq %d, want %d", n, i, evs[i].Seq, want[i].Seq)
			}
		}
	}
}

// Read decodes chunks of a large file in parallel: it must give what Scan
// gives, in order, and name the right line of an error in a later chunk.
func TestReadLargeFileMatchesScan(t *testing.T) {
	dir := t.TempDir()
	var sb strings.Builder
	const n = 90_000 // about 9 MB: several chunks
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&sb, `{"seq":%d,"t":%d,"kind":"note","op":"x","detail":"%s"}`+"\n", i, 1000+i, strings.Repeat("p", i%90))
	}
	good := sb.String()
	p := filepath.Join(dir, "big.jsonl")
	os.WriteFile(p, []byte(good+`{"seq":`), 0o644) // torn tail
	if _, err := Read(p); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("big.jsonl:%d: newline: missing", n+1)) {
		t.Fatalf("torn tail after %d lines: %v", n, err)
	}
	os.WriteFile(p, []byte(good), 0o644)
	evs, err := Read(p)
	if err != nil || len(evs) != n {
		t.Fatalf("%d events, %v", len(evs), err)
	}
	var scanned []Event
	Scan(p, func(e Event) error { scanned = append(scanned, e); return nil })
	for i := range evs {
		if evs[i].Seq != scanned[i].Seq || evs[i].Detail != scanned[i].Detail || evs[i].Seq != int64(i+1) {
			t.Fatalf("event %d: %+v vs %+v", i, evs[i], scanned[i])
		}
	}
	lines := strings.SplitAfter(good, "\n")
	lines[80_000] = `{"seq":80001,"t":5,"kind":"access","access":"read"}` + "\n"
	os.WriteFile(p, []byte(strings.Join(lines, "")), 0o644)
	if _, err := Read(p); err == nil || !strings.Contains(err.Error(), "big.jsonl:80001: value: missing") {
		t.Fatalf("got %v, want big.jsonl:80001: value: missing", err)
	}
}

// The writer's memory does not grow with the history: retained heap per
// appended event is reported (it should be ~0 B) along with the append
// cost, over 8 concurrent appenders.
func BenchmarkWriterAppend(b *testing.B) {
	w, err := Create(filepath.Join(b.TempDir(), "history.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ReportAllocs()
	b.SetParallelism(4) // 8 goroutines on 2 cores: appends are grouped
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		v := int64(1)
		for pb.Next() {
			w.Append(Event{Kind: Access, Process: "c1", Lease: "c1-17", Key: "k", Access: "write", Value: &v})
		}
	})
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(b.N), "retained-B/event")
}

// Close while appenders are queued: the file holds events 1..N with no
// gap, every Append that returned a Seq up to N is among them (a queued
// event is flushed by Close, not lost), and Append never blocks after
// Close.
func TestWriterCloseFlushesQueuedAppends(t *testing.T) {
	for round := 0; round < 20; round++ {
		path := filepath.Join(t.TempDir(), "history.jsonl")
		w, err := Create(path)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		var done []int64
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := 0; j < 200; j++ {
					e := w.Append(Event{Kind: Note, Op: "x"})
					mu.Lock()
					done = append(done, e.Seq)
					mu.Unlock()
				}
			}()
		}
		for {
			mu.Lock()
			n := len(done)
			mu.Unlock()
			if n > 50 {
				break
			}
			runtime.Gosched()
		}
		w.Close()
		wg.Wait()
		evs, err := Read(path)
		if err != nil {
			t.Fatal(err)
		}
		have := map[int64]bool{}
		var maxSeq int64
		for _, e := range evs {
			have[e.Seq] = true
			maxSeq = max(maxSeq, e.Seq)
		}
		if int64(len(evs)) != maxSeq {
			t.Fatalf("round %d: %d events but seq up to %d: a gap", round, len(evs), maxSeq)
		}
		for _, s := range done {
			if s <= maxSeq && !have[s] {
				t.Fatalf("round %d: event %d is missing", round, s)
			}
		}
	}
}

// An append queued behind a write in progress when Close is called is
// written by Close, not lost, whichever of them wakes first.
func TestWriterCloseWritesTheQueue(t *testing.T) {
	for round := 0; round < 20; round++ {
		path := filepath.Join(t.TempDir(), "history.jsonl")
		w, err := Create(path)
		if err != nil {
			t.Fatal(err)
		}
		w.mu.Lock()
		w.writing = true // another appender's write is in progress
		w.mu.Unlock()
		appended := make(chan Event)
		go func() { appended <- w.Append(Event{Kind: Note, Op: "queued"}) }()
		for {
			w.mu.Lock()
			n := len(w.buf)
			w.mu.Unlock()
			if n > 0 {
				break
			}
			runtime.Gosched()
		}
		closed := make(chan error)
		go func() { closed <- w.Close() }()
		time.Sleep(time.Millisecond) // let Close wait for the write in progress
		w.mu.Lock()
		w.writing = false // that write is done
		w.cond.Broadcast()
		w.mu.Unlock()
		<-appended
		if err := <-closed; err != nil {
			t.Fatalf("round %d: close: %v", round, err)
		}
		evs, err := Read(path)
		if err != nil || len(evs) != 1 || evs[0].Op != "queued" {
			t.Fatalf("round %d: %+v %v; want the queued event", round, evs, err)
		}
	}
}

// Reading a history while it is being written gives a prefix of whole
// events, or refuses a last line caught half written; never a panic or
// another error.
func TestReadWhileWriting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 5000; j++ {
				select {
				case <-stop:
					return
				default:
					w.Append(Event{Kind: Note, Op: "x", Detail: strings.Repeat("y", 200)})
				}
			}
		}()
	}
	last := 0
	for i := 0; i < 50; i++ {
		evs, err := Read(path)
		if err != nil && strings.Contains(err.Error(), ": newline: missing at the end of the last line") {
			continue
		}
		if err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
		if len(evs) < last {
			t.Fatalf("read %d: %d events after %d", i, len(evs), last)
		}
		last = len(evs)
	}
	close(stop)
	wg.Wait()
	w.Close()
}
