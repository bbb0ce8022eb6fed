package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tracecell/tracecell/internal/syncbuf"
)

func TestMCPUsageErrors(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	for _, tc := range []struct {
		name   string
		args   []string
		errHas string
	}{
		{"unix", []string{"--listen", "unix:" + filepath.Join(dir, "s.sock")}, "connect over TCP"},
		{"remote-without-allow", []string{"--listen", "0.0.0.0:0"}, "not a loopback address; pass --allow-remote"},
		{"remote-without-token", []string{"--listen", "0.0.0.0:0", "--allow-remote"}, "needs a bearer token"},
		{"bad-image-size", []string{"--max-image-size", "big"}, "--max-image-size"},
		{"small-result", []string{"--max-result-chars", "10"}, "--max-result-chars 10"},
		{"bad-exec-timeout", []string{"--exec-timeout", "soon"}, "--exec-timeout"},
		{"arguments", []string{"extra"}, "mcp takes no arguments"},
		{"bad-flag", []string{"--nope"}, "nope"},
		{"bad-policy", []string{"--policy", filepath.Join(dir, "missing.yaml")}, "missing.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"mcp", "--state-dir", state}, tc.args...)
			code, _, stderr := runCLI(t, args...)
			if code != 125 || !strings.Contains(stderr, tc.errHas) {
				t.Fatalf("status %d stderr %q; want 125 containing %q", code, stderr, tc.errHas)
			}
			if n := strings.Count(strings.TrimSpace(stderr), "\n"); n > 0 {
				t.Errorf("error is %d lines, want one: %q", n+1, stderr)
			}
		})
	}
}

// TestMCPSIGTERM runs `tracecell mcp` in-process on a free port, calls the
// python tool over SSE, sends this process SIGTERM and expects exit 0.
func TestMCPSIGTERM(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3: the MCP command test runs a real worker")
	}
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	os.WriteFile(pol, []byte("net: deny\nmemory: 2G\n"), 0o644)
	var errb syncbuf.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(strings.NewReader(""), io.Discard, &errb, []string{"tracecell", "mcp", "--policy", pol, "--state-dir", filepath.Join(dir, "state"),
			"--listen", "127.0.0.1:0", "--pool-size", "1", "--exec-timeout", "20s", "--log-format", "json"})
	}()
	// The address is in the "listening" log line.
	var addr string
	for addr == "" {
		select {
		case code := <-done:
			t.Fatalf("mcp exited %d: %s", code, errb.String())
		default:
		}
		for _, line := range strings.Split(errb.String(), "\n") {
			var l struct{ Message, Listen string }
			if json.Unmarshal([]byte(line), &l) == nil && l.Message == "tracecell mcp: listening" {
				addr = l.Listen
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.SSEClientTransport{Endpoint: "http://" + addr + "/sse"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ins := cs.InitializeResult().Instructions; !strings.Contains(ins, "at most 20 seconds") || !strings.Contains(ins, "2 GiB") {
		t.Errorf("instructions do not carry the policy's limits:\n%s", ins)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "python", Arguments: map[string]any{"code": "6 * 7"}})
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, "[result]\n42\n") {
		t.Fatalf("python: %s", text)
	}
	if resp, err := http.Get("http://" + addr + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("mcp exited %d after SIGTERM: %s", code, errb.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("mcp did not stop after SIGTERM")
	}
	cs.Close()
	if !strings.Contains(errb.String(), `"session_from":"mcp-session"`) {
		t.Errorf("no structured log of the call with its session: %s", errb.String())
	}
}
