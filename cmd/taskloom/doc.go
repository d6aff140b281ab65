// Command taskloom runs the Taskloom service and its administrative
// commands (migrate, check, version). See README.md.
package main
