package metrics

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/plugin"
)

// ScrapeTimeout bounds the store queries a scrape runs.
const ScrapeTimeout = 5 * time.Second

// A Series is one metric family a Recorder exports.
type Series struct {
	Name string
	Type string // counter, gauge or histogram
}

// Taskloom lists the families a Recorder exports of its own, besides the
// Go runtime's and the process's (go_*, process_*), for what reads them
// by name: the Grafana dashboard in deploy/ is checked against it.
// TestTaskloomListsEverySeries keeps it equal to what New registers.
var Taskloom = []Series{
	{"taskloom_iterations_total", "counter"},
	{"taskloom_tasks", "gauge"},
	{"taskloom_claim_duration_seconds", "histogram"},
	{"taskloom_model_request_duration_seconds", "histogram"},
	{"taskloom_model_tokens_total", "counter"},
	{"taskloom_model_up", "gauge"},
	{"taskloom_notifications_sent_total", "counter"},
	{"taskloom_notifications_failed_total", "counter"},
	{"taskloom_notifications_dead_total", "counter"},
	{"taskloom_notifications_pending", "gauge"},
	{"taskloom_lease_losses_total", "counter"},
}

// Recorder holds Taskloom's metrics on a private registry. Its methods are
// safe for concurrent use; a nil *Recorder records nothing.
type Recorder struct {
	reg         *prometheus.Registry
	iterations  *prometheus.CounterVec
	claim       prometheus.Histogram
	model       prometheus.Histogram
	tokens      *prometheus.CounterVec
	sent        *prometheus.CounterVec
	failed      *prometheus.CounterVec
	dead        *prometheus.CounterVec
	leaseLosses prometheus.Counter
	modelUp     prometheus.Gauge
}

// Options configure a Recorder.
type Options struct {
	// Store, when set, is read at scrape time for the tasks by status and
	// the pending notifications.
	Store  domain.Store
	Logger *slog.Logger
	// NoRuntime leaves out the Go runtime and process collectors (tests
	// that compare whole scrapes set it).
	NoRuntime bool
}

// New returns a Recorder with every series registered.
func New(o Options) *Recorder {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	r := &Recorder{
		reg: prometheus.NewRegistry(),
		iterations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "taskloom_iterations_total",
			Help: "Task iterations by outcome: the status they left the task in (continued, completed, failed, stalemate, waiting, paused), or rejected, released, error.",
		}, []string{"outcome"}),
		claim: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "taskloom_claim_duration_seconds",
			Help:    "How long claiming the next task from the queue took, for claims made on their own (a claim made with a worker's commit rides in that commit's round trip and is not observed).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}),
		model: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "taskloom_model_request_duration_seconds",
			Help:    "How long an iteration's model call took.",
			Buckets: []float64{.1, .25, .5, 1, 2, 4, 8, 15, 30, 60, 120},
		}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "taskloom_model_tokens_total",
			Help: "Tokens used by iterations' model calls, by kind (prompt, completion, cached: prompt tokens the provider served from its cache, when it reports them).",
		}, []string{"kind"}),
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "taskloom_notifications_sent_total",
			Help: "Notification messages a chat platform accepted, by platform.",
		}, []string{"platform"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "taskloom_notifications_failed_total",
			Help: "Notification messages that could not be delivered (they stay pending and are retried), by platform.",
		}, []string{"platform"}),
		dead: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "taskloom_notifications_dead_total",
			Help: "Notifications given up on (dead letters: the channel is gone or forbidden, or 24 hours of failures), by platform; they are kept as failed until retried.",
		}, []string{"platform"}),
		leaseLosses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "taskloom_lease_losses_total",
			Help: "Iteration results rejected because the worker had lost its lease.",
		}),
		modelUp: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "taskloom_model_up",
			Help: "1 while the model answers, 0 after a call it failed (unreachable, or refusing: tasks are on hold), until one succeeds.",
		}),
	}
	r.modelUp.Set(1)
	r.reg.MustRegister(r.iterations, r.claim, r.model, r.tokens, r.sent, r.failed, r.dead, r.leaseLosses, r.modelUp)
	// The token kinds exist from the start, so a rate() has a zero to begin from.
	for _, k := range []string{"prompt", "completion", "cached"} {
		r.tokens.WithLabelValues(k)
	}
	if o.Store != nil {
		r.reg.MustRegister(&storeCollector{store: o.Store, log: o.Logger})
	}
	if !o.NoRuntime {
		r.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	return r
}

// Registry is the Recorder's registry, for tests and for adding
// collectors.
func (r *Recorder) Registry() *prometheus.Registry { return r.reg }

// Handler serves the registry in the Prometheus exposition formats.
func (r *Recorder) Handler() http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Iteration counts an iteration by outcome (tasks.Metrics).
func (r *Recorder) Iteration(outcome string) {
	if r == nil {
		return
	}
	r.iterations.WithLabelValues(outcome).Inc()
}

// Claim observes a claim's duration (tasks.Metrics).
func (r *Recorder) Claim(d time.Duration) {
	if r == nil {
		return
	}
	r.claim.Observe(d.Seconds())
}

// ModelRequest observes a model call and counts its tokens (tasks.Metrics).
func (r *Recorder) ModelRequest(d time.Duration, u plugin.Usage) {
	if r == nil {
		return
	}
	r.model.Observe(d.Seconds())
	r.tokens.WithLabelValues("prompt").Add(float64(max(u.PromptTokens, 0)))
	r.tokens.WithLabelValues("completion").Add(float64(max(u.CompletionTokens, 0)))
	r.tokens.WithLabelValues("cached").Add(float64(max(u.CachedTokens, 0)))
}

// LeaseLost counts a result rejected for a lost lease (tasks.Metrics).
func (r *Recorder) LeaseLost() {
	if r == nil {
		return
	}
	r.leaseLosses.Inc()
}

// ModelUp says whether the model answers (tasks.Metrics).
func (r *Recorder) ModelUp(up bool) {
	if r == nil {
		return
	}
	if up {
		r.modelUp.Set(1)
	} else {
		r.modelUp.Set(0)
	}
}

// NotificationSent counts a delivered message (notify.Metrics).
func (r *Recorder) NotificationSent(platform string) {
	if r == nil {
		return
	}
	r.sent.WithLabelValues(platformLabel(platform)).Inc()
}

// NotificationFailed counts a failed delivery (notify.Metrics).
func (r *Recorder) NotificationFailed(platform string) {
	if r == nil {
		return
	}
	r.failed.WithLabelValues(platformLabel(platform)).Inc()
}

// NotificationsDead counts n notifications given up on (notify.Metrics).
func (r *Recorder) NotificationsDead(platform string, n int) {
	if r == nil {
		return
	}
	r.dead.WithLabelValues(platformLabel(platform)).Add(float64(max(n, 0)))
}

func platformLabel(p string) string {
	if p == "" {
		return "unknown"
	}
	return p
}

// storeCollector reads the gauges that are facts about the database, not
// about this process, at scrape time: every replica reports the same
// queue.
type storeCollector struct {
	store domain.Store
	log   *slog.Logger
}

var (
	tasksDesc = prometheus.NewDesc("taskloom_tasks",
		"Tasks by status (the queue is queued plus running).", []string{"status"}, nil)
	pendingDesc = prometheus.NewDesc("taskloom_notifications_pending",
		"Notifications stored and not yet delivered.", nil, nil)
)

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- tasksDesc
	ch <- pendingDesc
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), ScrapeTimeout)
	defer cancel()
	for _, st := range domain.Statuses {
		n, err := c.store.CountTasks(ctx, domain.TaskFilter{Statuses: []domain.Status{st}})
		if err != nil {
			c.log.Warn("metrics: count tasks", "status", st, "err", err)
			ch <- prometheus.NewInvalidMetric(tasksDesc, err)
			return
		}
		ch <- prometheus.MustNewConstMetric(tasksDesc, prometheus.GaugeValue, float64(n), string(st))
	}
	n, err := c.store.Pending(ctx)
	if err != nil {
		c.log.Warn("metrics: pending notifications", "err", err)
		ch <- prometheus.NewInvalidMetric(pendingDesc, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(n))
}
