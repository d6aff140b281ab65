package app_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpRoleVar, in a stdio MCP server's configured env, makes this test
// binary that server instead of running the tests.
const mcpRoleVar = "APP_TEST_MCP_ROLE"

func TestMain(m *testing.M) {
	if os.Getenv(mcpRoleVar) == "env-server" {
		envServer()
		return
	}
	os.Exit(m.Run())
}

// envServer is an MCP server on stdin and stdout whose one tool, "env",
// answers with its environment.
func envServer() {
	s := sdk.NewServer(&sdk.Implementation{Name: "env", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "env", Description: "the server's environment"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.Join(os.Environ(), "\n")}}}, nil, nil
	})
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
