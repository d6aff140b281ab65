// Package httpapi serves Taskloom over HTTP on TASKLOOM_HTTP_ADDR: the
// health and readiness probes, and the mux that plugins' routes, the JSON
// API, the dashboard and the Slack endpoints are mounted on.
//
// NewAPI(...).Mount(server) adds the task API of docs/api.md, docs/tasks.md, docs/security.md
// (list, get, events, create, pause/resume/cancel, answer, retry,
// approve/deny; the outbox's notifications and their retry; {"error":
// "..."} bodies), the
// Server-Sent Events stream of the event log at /api/events, the embedded
// dashboard at / (plain HTML, CSS and JavaScript under dashboard/, no build
// step) and, when given, /metrics. docs/openapi.yaml describes every route;
// TestOpenAPIMatchesRoutes keeps the two in step.
package httpapi
