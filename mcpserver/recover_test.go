package mcpserver

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
)

// TestToolPanicRecovered: a panic in a tool handler is one error result,
// not the end of the process (the go-sdk does not recover handlers).
func TestToolPanicRecovered(t *testing.T) {
	for _, tc := range []struct {
		name  string
		panic any
	}{{"string", "boom"}, {"error", context.Canceled}, {"nil map", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			h := recovered(zerolog.Nop(), func(ctx context.Context, req *mcp.CallToolRequest, in PythonArgs) (*mcp.CallToolResult, any, error) {
				if tc.panic == nil {
					var m map[string]int
					//lint:ignore SA5000 the runtime panic of this write is what the case tests
					m["x"] = 1
				}
				panic(tc.panic)
			})
			res, _, err := h(context.Background(), nil, PythonArgs{Code: "1"})
			if err != nil || res == nil || !res.IsError {
				t.Fatalf("res %+v err %v, want an error result", res, err)
			}
			if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, "internal error") {
				t.Fatalf("text %q", text)
			}
		})
	}
}
