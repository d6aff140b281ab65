// Package app wires Taskloom together: it reads the configuration, opens
// the store, picks the model, registers the plugins with the runtime,
// serves HTTP and shuts everything down in order on SIGINT/SIGTERM. The
// taskloom command is a thin shell around Main, so start-up and shutdown
// are tested in-process.
//
// The commands (serve, the default; migrate, check, prune, version, tasks,
// help and completion) are a github.com/spf13/cobra tree, so every command
// has its own --help and the completion scripts cover them all. serve's
// help lists the environment from config.Vars, the list config.Load reads.
package app
