// Package metrics is Taskloom's Prometheus instrumentation: a Recorder that
// the task and notification services call at the moments worth counting
// (it satisfies tasks.Metrics and notify.Metrics), collectors that read the
// queue depth and the pending notifications from the store at scrape time,
// and the /metrics handler.
//
// Every Recorder has its own prometheus.Registry rather than the global
// one, so two cores in one test binary never share a counter.
//
// The series, following Prometheus naming conventions:
//
//	taskloom_iterations_total{outcome}          counter
//	taskloom_tasks{status}                      gauge, read at scrape
//	taskloom_claim_duration_seconds             histogram
//	taskloom_model_request_duration_seconds     histogram
//	taskloom_model_tokens_total{kind}           counter; kind = prompt|completion|cached
//	taskloom_model_up                           gauge; 0 after a failed model call
//	taskloom_notifications_sent_total{platform} counter
//	taskloom_notifications_failed_total{platform} counter
//	taskloom_notifications_dead_total{platform} counter; notifications given up on
//	taskloom_notifications_pending              gauge, read at scrape
//	taskloom_lease_losses_total                 counter
//
// plus the Go runtime and process collectors. Taskloom lists them for
// whatever reads them by name.
package metrics
