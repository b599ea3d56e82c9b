package reports

import (
	"strings"
)

// A document is the content of a report, built once and rendered both as
// Markdown (report.md) and as HTML (report.html), so the two never drift.
type document struct {
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
		spans []inline
		note  bool
	}
	table struct {
		header []string
		rows   [][]cell
	}
	list struct{ items [][]inline }
	// image refers to a file next to the report.
	image struct{ alt, src string }
	pre   struct{ text string }
)

func (heading) isBlock() {}
func (para) isBlock()    {}
func (table) isBlock()   {}
func (list) isBlock()    {}
func (image) isBlock()   {}
func (pre) isBlock()     {}

// inline is a run of inline text: plain, bold, code, or a link.
type inline struct {
	text string
	href string
	bold bool
	code bool
}

// cell is a table cell; good and bad tint it in HTML.
type cell struct {
	spans []inline
	tone  int // 0 neutral, 1 good, -1 bad
}

func txt(s string) inline        { return inline{text: s} }
func bold(s string) inline       { return inline{text: s, bold: true} }
func code(s string) inline       { return inline{text: s, code: true} }
func link(s, href string) inline { return inline{text: s, href: href} }
func plain(s string) cell        { return cell{spans: []inline{txt(s)}} }
func toned(s string, ok bool) cell {
	if ok {
		return cell{spans: []inline{txt(s)}, tone: 1}
	}
	return cell{spans: []inline{bold(s)}, tone: -1}
}

func (d *document) h(level int, s string) { d.blocks = append(d.blocks, heading{level, s}) }
func (d *document) p(spans ...inline)     { d.blocks = append(d.blocks, para{spans: spans}) }
func (d *document) callout(spans ...inline) {
	d.blocks = append(d.blocks, para{spans: spans, note: true})
}
func (d *document) ul(items ...[]inline)  { d.blocks = append(d.blocks, list{items}) }
func (d *document) img(alt, src string)   { d.blocks = append(d.blocks, image{alt, src}) }
func (d *document) preformatted(s string) { d.blocks = append(d.blocks, pre{s}) }
func (d *document) tab(t table)           { d.blocks = append(d.blocks, t) }
func item(spans ...inline) []inline       { return spans }

// markdown renders the document as GitHub-flavoured Markdown.
func (d *document) markdown() string {
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
		case table:
			b.WriteString("|")
			for _, hd := range x.header {
				b.WriteString(" " + mdCell(mdEscape(hd)) + " |")
			}
			b.WriteString("\n|")
			for range x.header {
				b.WriteString("---|")
			}
			b.WriteString("\n")
			for _, row := range x.rows {
				b.WriteString("|")
				for _, c := range row {
					b.WriteString(" " + mdCell(mdSpans(c.spans)) + " |")
				}
				b.WriteString("\n")
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

func mdSpans(spans []inline) string {
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
