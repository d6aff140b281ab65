// Package httpapi serves Taskloom over HTTP on TASKLOOM_HTTP_ADDR: the
// health and readiness probes, and the mux that plugins' routes, the JSON
// API, the dashboard and the Slack endpoints are mounted on.
package httpapi
