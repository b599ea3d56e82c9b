package report

import (
	"encoding/json"
	"os"

	"github.com/lockfault/lockfault/checker"
)

// jsonReport is the layout of report.json.
type jsonReport struct {
	Meta    Meta   `json:"meta"`
	Verdict string `json:"verdict"` // copy of result.verdict, "" without a result
	Matched bool   `json:"matched"`
	// Rates: for each class seen, in how many cycles it showed.
	Rates  map[string]jsonRate `json:"rates,omitempty"`
	Result *checker.Result     `json:"result"`
	Files  []string            `json:"files"`
}

type jsonRate struct {
	Cycles int `json:"cycles"` // cycles showing the class
	Of     int `json:"of"`     // cycles in the run
}

func writeJSON(path string, meta Meta, res *checker.Result, files []string) error {
	r := jsonReport{Meta: meta, Matched: meta.Matched, Result: res, Files: files}
	if res != nil {
		r.Verdict = res.Verdict
		if len(res.CycleObserved) > 0 {
			r.Rates = map[string]jsonRate{}
			for _, c := range res.Observed {
				hits, of := res.Rate(c)
				r.Rates[c] = jsonRate{hits, of}
			}
		}
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
