// Package testkit holds the fakes and fixtures other packages' tests share:
// a fresh PostgreSQL database per test, fake platforms, a scripted
// OpenAI-compatible server.
package testkit
