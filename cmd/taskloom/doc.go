// Command taskloom runs the Taskloom service and its administrative
// commands (migrate, check, prune, version, tasks, help, completion);
// `taskloom --help` lists them. See README.md.
package main
