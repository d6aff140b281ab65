package app

// WarnRootMCP is warnRootMCP, for the tests of package app_test.
var WarnRootMCP = warnRootMCP
