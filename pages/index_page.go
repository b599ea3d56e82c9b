package pages

import "html/template"

// indexTemplate is the page. Its style and script are the constants whose
// hashes the Content-Security-Policy allows; everything else is data,
// escaped by html/template for where it lands (text, attribute, URL).
var indexTemplate = template.Must(template.New("index").Funcs(indexFuncs).Parse(indexPage))

var indexFuncs = template.FuncMap{"row": rowClass}

const indexPage = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{{.CSP}}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>lockfault reports</title>
<style>` + indexStyle + `</style>
</head>
<body>
<h1>lockfault reports</h1>
<p>{{.Summary}} <span class="note">Written {{.Generated}} from the files in this folder; run the index again to see newer ones.</span></p>
{{if .Truncated}}<p><strong>The scan stopped after the first {{.TruncatedAt}} entries: the page lists only those.</strong></p>{{end}}
<p id="filter" hidden><label><input type="checkbox" id="failures"> show failures only</label></p>

<h2 id="campaigns">Campaigns</h2>
{{if not .Campaigns}}<p class="note">No campaign.json here (written by <code>simulate merge</code>).</p>{{end}}
{{range .Campaigns}}<section class="{{row .Fail}}">
<h3>{{.Name}} <a href="{{.Link}}">campaign.md</a> <a href="{{.JUnit}}">junit.xml</a></h3>
{{if .Problem}}<p><strong>Cannot read it:</strong> {{.Problem}}</p>{{else}}<p>{{.Summary}}</p>
<table>
<tr><th>subject</th><th>item</th><th>expected</th><th>rate of the expected outcome</th><th>other outcomes</th><th>verdict</th><th>first finding</th></tr>
{{range .Cells}}<tr class="{{row .Fail}}"><td>{{.Subject}}</td><td><code>{{.Item}}</code></td><td>{{.Expect}}</td><td class="v">{{.Rate}}</td><td>{{.Others}}</td><td class="v">{{.Verdict}}</td><td>{{.Finding}}{{if .Report}} <a href="{{.Report}}">report</a>{{end}}</td></tr>
{{end}}</table>
{{if .More}}<p class="note">{{.More}} more cells are in campaign.json.</p>{{end}}{{end}}
</section>
{{end}}
<h2 id="cards">Report cards</h2>
{{if not .Cards}}<p class="note">No suite.json here (written by <code>simulate suite</code>).</p>{{else}}<table>
<tr><th>started</th><th>lock</th><th>worker</th><th>backend</th><th>outcomes</th><th>card</th></tr>
{{range .Cards}}<tr class="{{row .Fail}}"><td>{{.Started}}</td><td>{{.Lock}}</td><td>{{.Worker}}</td><td>{{.Backend}}</td><td class="v">{{if .Problem}}cannot read it: {{.Problem}}{{else}}{{.Tally}}{{end}}</td><td><a href="{{.Link}}">{{.RunID}}</a></td></tr>
{{end}}</table>{{end}}

<h2 id="hunts">Hunts</h2>
{{if not .Hunts}}<p class="note">No hunt.json here (written by <code>simulate hunt</code>).</p>{{else}}<table>
<tr><th>started</th><th>lock</th><th>seed</th><th>tried</th><th>result</th><th>card</th></tr>
{{range .Hunts}}<tr class="{{row .Fail}}"><td>{{.Started}}</td><td>{{.Lock}}</td><td>{{.Seed}}</td><td>{{.Tried}}</td><td class="v">{{if .Problem}}cannot read it: {{.Problem}}{{else}}{{.Result}}{{end}}</td><td><a href="{{.Link}}">card.md</a></td></tr>
{{end}}</table>{{end}}

<h2 id="runs">Runs</h2>
{{if not .Runs}}<p class="note">{{if .Hunts}}No run here outside the hunts above (their runs are counted in their rows).{{else}}No report.json here (written by <code>simulate run</code>).{{end}}</p>{{else}}<table>
<tr><th>started</th><th>scenario</th><th>lock</th><th>backend</th><th>verdict (observed)</th><th>expected</th><th>matched</th><th>first finding</th><th>report</th></tr>
{{range .Runs}}<tr class="{{row .Fail}}"><td>{{.Started}}</td><td>{{.Scenario}}</td><td>{{.Lock}}</td><td>{{.Backend}}</td><td>{{.Verdict}}</td><td>{{.Expect}}</td><td class="v">{{.Match}}</td><td>{{.Finding}}{{if .Problem}} <em>{{.Problem}}</em>{{end}}</td><td><a href="{{.Link}}">report</a></td></tr>
{{end}}</table>{{end}}
<script>` + indexScript + `</script>
</body>
</html>
`
