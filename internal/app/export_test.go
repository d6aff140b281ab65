package app

// WarnRootMCP is warnRootMCP, for the tests of package app_test.
var WarnRootMCP = warnRootMCP

// Command is taskloom's command tree, for the tests that walk it.
var Command = command

// LogSandboxWorstCase is logSandboxWorstCase, for the tests of package
// app_test.
var LogSandboxWorstCase = logSandboxWorstCase

// FitProcesses is fitProcesses, for the tests of package app_test.
var FitProcesses = fitProcesses
