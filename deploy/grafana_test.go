package deploy

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/taskloom/taskloom/internal/metrics"
)

// dashboard is the part of a Grafana dashboard the checks read.
type dashboard struct {
	Title  string      `json:"title"`
	UID    string      `json:"uid"`
	Panels []dashPanel `json:"panels"`
}

type dashPanel struct {
	ID      int    `json:"id"`
	Type    string `json:"type"`
	Title   string `json:"title"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []dashPanel `json:"panels"` // a collapsed row's
}

// exportedSeries are the names a PromQL query may select from taskloom's
// /metrics: Taskloom's own series (metrics.Taskloom) and the Go runtime's
// and the process's, as a Recorder gathers them, a histogram by its
// _bucket, _sum and _count.
var exportedSeries = sync.OnceValue(func() map[string]bool {
	names := map[string]bool{}
	add := func(name, typ string) {
		switch typ {
		case "histogram":
			names[name+"_bucket"] = true
			fallthrough
		case "summary":
			names[name+"_sum"], names[name+"_count"] = true, true
		}
		if typ != "histogram" {
			names[name] = true
		}
	}
	for _, s := range metrics.Taskloom {
		add(s.Name, s.Type)
	}
	mfs, err := metrics.New(metrics.Options{}).Registry().Gather()
	if err != nil {
		panic(err)
	}
	for _, mf := range mfs {
		add(mf.GetName(), strings.ToLower(mf.GetType().String()))
	}
	return names
})

var (
	// What in PromQL names no metric: strings, label matchers, ranges and
	// subqueries, and the label lists of by, without, on, ignoring,
	// group_left and group_right.
	promqlStrings = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	promqlBraces  = regexp.MustCompile(`\{[^}]*\}|\[[^\]]*\]`)
	promqlLabels  = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	// An identifier; followed by "(" it is a function or an aggregation.
	promqlIdent    = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*(\s*\()?`)
	promqlKeywords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true,
		"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
		"inf": true, "nan": true, "atan2": true}
)

// promqlMetricNames returns the metric names PromQL expression expr
// selects, in order, each once. It reads enough PromQL for dashboards:
// selectors, functions, aggregations with their label lists, binary
// operators, ranges and Grafana's $variables within braces or ranges.
func promqlMetricNames(expr string) []string {
	s := promqlStrings.ReplaceAllString(expr, " ")
	s = promqlBraces.ReplaceAllString(s, " ")
	s = promqlLabels.ReplaceAllString(s, " ")
	var names []string
	for _, m := range promqlIdent.FindAllStringSubmatchIndex(s, -1) {
		if m[2] >= 0 {
			continue // a function
		}
		if m[0] > 0 && strings.ContainsRune("$0123456789.", rune(s[m[0]-1])) {
			continue // a Grafana variable, or a number's exponent or unit
		}
		name := s[m[0]:m[1]]
		if !promqlKeywords[strings.ToLower(name)] && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}

// checkGrafana checks the Grafana dashboard: every panel queries, every
// query selects metrics taskloom exports, and every series of Taskloom's
// own has a panel.
func checkGrafana(f files, p *problems) {
	const file = "grafana/taskloom.json"
	var d dashboard
	if err := json.Unmarshal([]byte(f[file]), &d); err != nil {
		p.add(file, "%v", err)
		return
	}
	if d.Title == "" || d.UID == "" {
		p.add(file, "want a title and a uid, so that a provisioned dashboard keeps its address")
	}
	queried := map[string]bool{}
	ids := map[int]string{}
	var walk func([]dashPanel)
	walk = func(panels []dashPanel) {
		for _, pn := range panels {
			if other, ok := ids[pn.ID]; ok {
				p.add(file, "panels %q and %q have the same id %d", other, pn.Title, pn.ID)
			}
			ids[pn.ID] = pn.Title
			walk(pn.Panels)
			if pn.Type == "row" {
				continue
			}
			if len(pn.Targets) == 0 {
				p.add(file, "panel %q has no query", pn.Title)
			}
			for _, t := range pn.Targets {
				names := promqlMetricNames(t.Expr)
				if len(names) == 0 {
					p.add(file, "panel %q, query %s: no query, or one that selects no metric (%q)", pn.Title, t.RefID, t.Expr)
				}
				for _, name := range names {
					queried[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_count"), "_sum")] = true
					if !exportedSeries()[name] {
						p.add(file, "panel %q queries %s, which taskloom does not export (internal/metrics)", pn.Title, name)
					}
				}
			}
		}
	}
	walk(d.Panels)
	for _, s := range metrics.Taskloom {
		if !queried[s.Name] {
			p.add(file, "no panel queries %s", s.Name)
		}
	}
}

func TestPromQLMetricNames(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		expr string
		want []string
	}{
		{`up`, []string{"up"}},
		{`max by (status) (taskloom_tasks{job=~"$job",status=~"queued|running"})`, []string{"taskloom_tasks"}},
		{`histogram_quantile(0.99, sum by (le) (rate(a_bucket{x="}"}[$__rate_interval])))`, []string{"a_bucket"}},
		{`sum(rate(a_sum[5m])) / sum(rate(a_count[5m])) * 60`, []string{"a_sum", "a_count"}},
		{`sum(rate(x[1m] offset 1h)) without (instance) > bool 1e3`, []string{"x"}},
		{`a and on (job) group_left (name) b unless c or a`, []string{"a", "b", "c"}},
		{`label_replace(a, "dst", "$1", "src", "(.*)")`, []string{"a"}},
		{`vector(1)`, nil},
	} {
		if got := promqlMetricNames(c.expr); !slices.Equal(got, c.want) {
			t.Errorf("promqlMetricNames(%q) = %q, want %q", c.expr, got, c.want)
		}
	}
}
