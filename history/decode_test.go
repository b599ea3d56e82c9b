package history

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"reflect"
	"testing"
)

// decodeRef is the reference: encoding/json.
func decodeRef(b []byte) (Event, error) {
	var e Event
	err := json.Unmarshal(b, &e)
	return e, err
}

func decodeFast(b []byte) (Event, error) {
	var e Event
	err := decodeLine(b, &e, newInterner())
	return e, err
}

// The fast decoder gives exactly what encoding/json gives, on random events
// as the Writer encodes them and on hand-made lines it must hand over.
func TestFastDecodeMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	strs := []string{"", "c1", "acquire", "a b", `q"uote`, "back\\slash", "tab\t", "é", "\u2028", "x\x01y", "lock:k"}
	ints := []int64{0, 1, -1, 42, math.MaxInt64, math.MinInt64, 1 << 53}
	for i := 0; i < 20000; i++ {
		s := func() string { return strs[rng.Intn(len(strs))] }
		n := func() int64 { return ints[rng.Intn(len(ints))] }
		var p *int64
		if rng.Intn(2) == 0 {
			v := n()
			p = &v
		}
		e := Event{Seq: n(), Time: n(), Kind: s(), Process: s(), Op: s(), OpID: n(), Lease: s(), Key: s(), Error: s(),
			Token: s(), Fence: n(), ValidityMs: n(), ValidUntil: n(), Access: s(), Value: p, Read: p, Wrote: nil,
			Rejected: rng.Intn(2) == 0, Fault: s(), Target: s(), Detail: s(), Cycle: int(n() % 1000)}
		b, _ := json.Marshal(e)
		got, gerr := decodeFast(b)
		want, werr := decodeRef(b)
		if werr == nil {
			werr = Validate(&want)
		}
		if (gerr == nil) != (werr == nil) || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s:\nfast %+v %v\njson %+v %v", b, got, gerr, want, werr)
		}
	}
	lines := []string{
		`{"seq":1,"t":5,"kind":"note"}`,
		` { "seq" : 1 , "t" : 5 , "kind" : "note" } `,
		`{"seq":1,"t":5,"kind":"note","extra":{"a":[1,2]}}`,
		`{"seq":1,"t":5.0,"kind":"note"}`,
		`{"seq":1,"t":5e3,"kind":"note"}`,
		`{"seq":01,"t":5,"kind":"note"}`,
		`{"seq":1,"t":5,"kind":"note",}`,
		`{"seq":1,"t":5,"kind":"note"} x`,
		`{"seq":1,"t":5,"kind":"no\u0074e"}`,
		`{"seq":1,"t":5,"Kind":"note"}`,
		`{"seq":1,"t":5,"kind":"access","access":"read","value":null}`,
		`{"seq":1,"t":5,"kind":"access","access":"read","value":-0}`,
		`{"seq":1,"t":5,"kind":"access","access":"read","value":9223372036854775808}`,
		`{"seq":1,"t":5,"kind":"note","rejected":tru}`,
		`{"seq":1,"t":5,"kind":"note","cycle":99999999999}`,
		`{"seq":1,"t":null,"kind":"note"}`,
		`{"seq":1,"t":5,"kind":"note","kind":"ok","op":"x"}`,
		`{}`,
		`[]`,
		`{"seq":1`,
	}
	for _, l := range lines {
		got, gerr := decodeFast([]byte(l))
		want, werr := decodeRef([]byte(l))
		if werr == nil {
			werr = Validate(&want)
		}
		if (gerr == nil) != (werr == nil) || (werr == nil && !reflect.DeepEqual(got, want)) {
			t.Errorf("%s:\nfast %+v %v\njson %+v %v", l, got, gerr, want, werr)
		}
	}
}

func BenchmarkDecodeLine(b *testing.B) {
	v := int64(7)
	line, _ := json.Marshal(Event{Seq: 123456, Time: 987654321012, Kind: Access, Process: "c3", Lease: "c3-1234", Key: "key07", Access: "write", Value: &v, Fence: 99})
	in := newInterner()
	b.SetBytes(int64(len(line)))
	for i := 0; i < b.N; i++ {
		var e Event
		if err := decodeLine(line, &e, in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lines/s")
	_ = fmt.Sprint()
}
