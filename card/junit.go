package card

import (
	"encoding/xml"
	"fmt"
	"os"
	"strings"
)

// JUnit XML, the subset CI systems read: one testsuite per card, one
// testcase per property. A violation is a <failure> whose message is the
// finding's sentence and the report path; not claimed is <skipped>; a
// harness error is an <error>.

// JUnitSuites is the document root.
type JUnitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []JUnitSuite `xml:"testsuite"`
}

// JUnitSuite is one lock's card.
type JUnitSuite struct {
	Name      string          `xml:"name,attr"`
	Tests     int             `xml:"tests,attr"`
	Failures  int             `xml:"failures,attr"`
	Errors    int             `xml:"errors,attr"`
	Skipped   int             `xml:"skipped,attr"`
	Time      string          `xml:"time,attr"`
	Timestamp string          `xml:"timestamp,attr,omitempty"`
	Props     []JUnitProperty `xml:"properties>property,omitempty"`
	Cases     []JUnitCase     `xml:"testcase"`
}

// JUnitProperty is a name/value pair of the suite (lock, backend, run id).
type JUnitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

// JUnitCase is one property.
type JUnitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *JUnitMessage `xml:"failure,omitempty"`
	Error     *JUnitMessage `xml:"error,omitempty"`
	Skipped   *JUnitMessage `xml:"skipped,omitempty"`
	// SystemOut says what the run showed (its evidence).
	SystemOut string `xml:"system-out,omitempty"`
}

// JUnitMessage is a failure, error or skip.
type JUnitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// JUnit converts a card.
func (c *Card) JUnit() JUnitSuites {
	s := JUnitSuite{Name: "lockfault suite: " + c.Lock, Tests: len(c.Rows),
		Time: secs(c.Duration.Seconds()), Timestamp: c.Started.UTC().Format("2006-01-02T15:04:05"),
		Props: []JUnitProperty{{"lock", c.Lock}, {"backend", c.Backend}, {"run_id", c.RunID}}}
	if c.Worker != "" {
		s.Props = append(s.Props, JUnitProperty{"worker", c.Worker})
	}
	if c.Version != "" {
		s.Props = append(s.Props, JUnitProperty{"version", c.Version})
	}
	for _, r := range c.Rows {
		tc := JUnitCase{Name: r.Property, Classname: "lockfault." + c.Lock, Time: secs(r.Duration.Seconds()), SystemOut: r.Evidence}
		switch r.Outcome {
		case Violated:
			s.Failures++
			msg := r.Finding
			if r.Report != "" {
				msg += " (report: " + r.Report + ")"
			}
			body := []string{r.Summary()}
			body = append(body, r.Findings...)
			if r.Report != "" {
				body = append(body, "report: "+r.Report)
			}
			tc.Failure = &JUnitMessage{Message: msg, Type: strings.Join(r.Observed, ","), Text: strings.Join(body, "\n")}
		case NotClaimed:
			s.Skipped++
			tc.Skipped = &JUnitMessage{Message: "not claimed: " + r.Finding}
		case HarnessError, Unknown:
			s.Errors++
			tc.Error = &JUnitMessage{Message: r.Finding, Type: string(r.Outcome), Text: r.Finding}
		}
		s.Cases = append(s.Cases, tc)
	}
	return JUnitSuites{Suites: []JUnitSuite{s}}
}

// WriteJUnit writes junit.xml.
func (c *Card) WriteJUnit(path string) error {
	data, err := xml.MarshalIndent(c.JUnit(), "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte(xml.Header), append(data, '\n')...), 0o644)
}

func secs(s float64) string { return fmt.Sprintf("%.3f", s) }
