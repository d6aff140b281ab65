//go:build !linux

package mcp

// undumpable does nothing where Linux's prctl is not: there a process of
// the same user may read Taskloom's environment (see docs/FEATURES.md).
func undumpable() error { return nil }
