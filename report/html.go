package report

import (
	"encoding/base64"
	"html"
	"os"
	"path/filepath"
	"strings"
)

const pageStyle = `body{font-family:system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;max-width:1400px;margin:2em auto;padding:0 1em;color:#222;line-height:1.45}
h1{border-bottom:2px solid #ddd;padding-bottom:.3em}h2{border-bottom:1px solid #eee;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:1em 0;font-size:14px}th,td{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f3f3f3}td.good{background:#e3f6e3}td.bad{background:#fbe0e0}
code,pre{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:13px}pre{background:#f6f6f6;padding:.8em;overflow-x:auto}
blockquote{border-left:4px solid #e0a000;background:#fff8e5;margin:1em 0;padding:.5em 1em}
img{max-width:100%;border:1px solid #ddd}`

// HTML renders the document as a self-contained page: images found in dir
// are embedded as data URIs, so the page can be mailed or attached alone.
func (d *Document) HTML(title, dir string) string {
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>")
	b.WriteString(html.EscapeString(title))
	b.WriteString("</title>\n<style>" + pageStyle + "</style>\n</head>\n<body>\n")
	for _, bl := range d.blocks {
		switch x := bl.(type) {
		case heading:
			lv := string(rune('0' + min(max(x.level, 1), 6)))
			b.WriteString("<h" + lv + ">" + html.EscapeString(x.text) + "</h" + lv + ">\n")
		case para:
			if x.note {
				b.WriteString("<blockquote>" + htmlSpans(x.spans) + "</blockquote>\n")
			} else {
				b.WriteString("<p>" + htmlSpans(x.spans) + "</p>\n")
			}
		case list:
			b.WriteString("<ul>\n")
			for _, it := range x.items {
				b.WriteString("<li>" + htmlSpans(it) + "</li>\n")
			}
			b.WriteString("</ul>\n")
		case image:
			src := x.src
			if data, err := os.ReadFile(filepath.Join(dir, x.src)); err == nil {
				src = "data:image/png;base64," + base64.StdEncoding.EncodeToString(data)
			}
			b.WriteString("<p><a href=\"" + html.EscapeString(x.src) + "\"><img alt=\"" + html.EscapeString(x.alt) + "\" src=\"" + src + "\"></a></p>\n")
		case pre:
			b.WriteString("<pre>" + html.EscapeString(x.text) + "</pre>\n")
		case Table:
			b.WriteString("<table>\n<tr>")
			for _, hd := range x.Header {
				b.WriteString("<th>" + html.EscapeString(hd) + "</th>")
			}
			b.WriteString("</tr>\n")
			for _, row := range x.Rows {
				b.WriteString("<tr>")
				for _, c := range row {
					switch c.Tone {
					case 1:
						b.WriteString(`<td class="good">`)
					case -1:
						b.WriteString(`<td class="bad">`)
					default:
						b.WriteString("<td>")
					}
					b.WriteString(htmlSpans(c.Spans) + "</td>")
				}
				b.WriteString("</tr>\n")
			}
			b.WriteString("</table>\n")
		}
	}
	b.WriteString("</body>\n</html>\n")
	return b.String()
}

func htmlSpans(spans []Inline) string {
	var b strings.Builder
	for _, s := range spans {
		t := html.EscapeString(s.text)
		switch {
		case s.code:
			t = "<code>" + t + "</code>"
		case s.bold:
			t = "<strong>" + t + "</strong>"
		}
		if s.href != "" {
			t = `<a href="` + html.EscapeString(s.href) + `">` + t + "</a>"
		}
		b.WriteString(t)
	}
	return b.String()
}
