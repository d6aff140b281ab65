// Package clock injects time. Everything in Taskloom that waits — the
// notification flush, task leases, retry backoff, the provider time budget —
// takes a Clock, so tests drive time with Fake instead of sleeping.
package clock
