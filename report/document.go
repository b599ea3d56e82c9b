package report

import (
	"strings"
)

// A Document is the content of a report, built once and rendered both as
// Markdown (report.md) and as HTML (report.html), so the two never drift.
type Document struct {
	blocks []block
}

// block is one piece of a document.
type block interface{ isBlock() }

type (
	heading struct {
		level int
		text  string
	}
	// para is a paragraph of inline spans; note marks it as a call-out.
	para struct {
		spans []Inline
		note  bool
	}
	Table struct {
		Header []string
		Rows   [][]Cell
	}
	list struct{ items [][]Inline }
	// image refers to a file next to the report.
	image struct{ alt, src string }
	pre   struct{ text string }
)

func (heading) isBlock() {}
func (para) isBlock()    {}
func (Table) isBlock()   {}
func (list) isBlock()    {}
func (image) isBlock()   {}
func (pre) isBlock()     {}

// Inline is a run of Inline text: plain, bold, code, or a link.
type Inline struct {
	text string
	href string
	bold bool
	code bool
}

// Cell is a table Cell; good and bad tint it in HTML.
type Cell struct {
	Spans []Inline
	Tone  int // 0 neutral, 1 good, -1 bad
}

func Txt(s string) Inline        { return Inline{text: s} }
func Bold(s string) Inline       { return Inline{text: s, bold: true} }
func Code(s string) Inline       { return Inline{text: s, code: true} }
func Link(s, href string) Inline { return Inline{text: s, href: href} }
func Plain(s string) Cell        { return Cell{Spans: []Inline{Txt(s)}} }
func Toned(s string, ok bool) Cell {
	if ok {
		return Cell{Spans: []Inline{Txt(s)}, Tone: 1}
	}
	return Cell{Spans: []Inline{Bold(s)}, Tone: -1}
}

func (d *Document) H(level int, s string) { d.blocks = append(d.blocks, heading{level, s}) }
func (d *Document) P(spans ...Inline)     { d.blocks = append(d.blocks, para{spans: spans}) }
func (d *Document) Callout(spans ...Inline) {
	d.blocks = append(d.blocks, para{spans: spans, note: true})
}
func (d *Document) UL(items ...[]Inline)  { d.blocks = append(d.blocks, list{items}) }
func (d *Document) Img(alt, src string)   { d.blocks = append(d.blocks, image{alt, src}) }
func (d *Document) Preformatted(s string) { d.blocks = append(d.blocks, pre{s}) }
func (d *Document) Tab(t Table)           { d.blocks = append(d.blocks, t) }
func Item(spans ...Inline) []Inline       { return spans }

// Markdown renders the document as GitHub-flavoured Markdown.
func (d *Document) Markdown() string {
	var b strings.Builder
	for _, bl := range d.blocks {
		switch x := bl.(type) {
		case heading:
			b.WriteString(strings.Repeat("#", x.level) + " " + mdEscape(x.text) + "\n\n")
		case para:
			if x.note {
				b.WriteString("> ")
			}
			b.WriteString(mdSpans(x.spans) + "\n\n")
		case list:
			for _, it := range x.items {
				b.WriteString("- " + mdSpans(it) + "\n")
			}
			b.WriteString("\n")
		case image:
			b.WriteString("![" + mdEscape(x.alt) + "](" + x.src + ")\n\n")
		case pre:
			b.WriteString("```\n" + strings.TrimRight(x.text, "\n") + "\n```\n\n")
		case Table:
			b.WriteString("|")
			for _, hd := range x.Header {
				b.WriteString(" " + mdCell(mdEscape(hd)) + " |")
			}
			b.WriteString("\n|")
			for range x.Header {
				b.WriteString("---|")
			}
			b.WriteString("\n")
			for _, row := range x.Rows {
				b.WriteString("|")
				for _, c := range row {
					b.WriteString(" " + mdCell(mdSpans(c.Spans)) + " |")
				}
				b.WriteString("\n")
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

func mdSpans(spans []Inline) string {
	var b strings.Builder
	for _, s := range spans {
		t := mdEscape(s.text)
		switch {
		case s.code:
			t = "`" + strings.ReplaceAll(s.text, "`", "'") + "`"
		case s.bold:
			t = "**" + t + "**"
		}
		if s.href != "" {
			t = "[" + t + "](" + s.href + ")"
		}
		b.WriteString(t)
	}
	return b.String()
}

// mdEscape keeps text from being read as Markdown syntax.
func mdEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "`", "\\`", "[", `\[`, "]", `\]`, "<", "&lt;", ">", "&gt;")
	return r.Replace(s)
}

// mdCell keeps a cell on one table row.
func mdCell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}
