// Package app wires Taskloom together: it reads the configuration, opens
// the store, picks the model, registers the plugins with the runtime,
// serves HTTP and shuts everything down in order on SIGINT/SIGTERM. The
// taskloom command is a thin shell around Main, so start-up and shutdown
// are tested in-process.
package app
