package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tracecell/tracecell/internal/syncbuf"
)

func TestServeUsageErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty-token")
	os.WriteFile(empty, []byte("\n"), 0o600)
	state := filepath.Join(dir, "state")
	for _, tc := range []struct {
		name   string
		args   []string
		errHas string
	}{
		{"remote-without-allow", []string{"--listen", "0.0.0.0:0"}, "not a loopback address; pass --allow-remote"},
		{"remote-without-token", []string{"--listen", "0.0.0.0:0", "--allow-remote"}, "needs a bearer token"},
		{"bad-listen", []string{"--listen", "nonsense"}, "want unix:PATH or 127.0.0.1:PORT"},
		{"bad-exec-timeout", []string{"--exec-timeout", "soon"}, "--exec-timeout"},
		{"zero-exec-timeout", []string{"--exec-timeout", "0"}, "--exec-timeout must be above 0"},
		{"bad-size", []string{"--max-copy-size", "lots"}, "--max-copy-size"},
		{"empty-token", []string{"--token-file", empty}, "want one token"},
		{"missing-token", []string{"--token-file", filepath.Join(dir, "nope")}, "--token-file"},
		{"arguments", []string{"extra"}, "takes no arguments"},
		{"bad-flag", []string{"--pool", "3"}, "pool"},
		{"bad-net", []string{"--net", "maybe"}, "--net"},
		{"long-socket", []string{"--listen", "unix:/" + strings.Repeat("x", 120)}, "longer than 107 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"serve", "--state-dir", state}, tc.args...)
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

// TestServeSIGTERM runs `tracecell serve` in-process, waits until it
// answers, sends this process SIGTERM and expects a clean exit 0 with the
// socket removed.
func TestServeSIGTERM(t *testing.T) {
	dir, err := os.MkdirTemp("", "tc-serve-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "s.sock")
	tok := filepath.Join(dir, "token")
	os.WriteFile(tok, []byte("t0ken\n"), 0o600)
	var errb syncbuf.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(strings.NewReader(""), io.Discard, &errb, []string{"tracecell", "serve", "--state-dir", filepath.Join(dir, "state"),
			"--listen", "unix:" + sock, "--pool-size", "0", "--token-file", tok, "--log-format", "json"})
	}()
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := c.Get("http://x/v1/sessions")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != 401 {
				t.Fatalf("without the token: %d", resp.StatusCode)
			}
			break
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited %d: %s", code, errb.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not answer: %v; %s", err, errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st, err := os.Stat(sock); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode: %v %v", st, err)
	}
	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("serve exited %d after SIGTERM: %s", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop after SIGTERM")
	}
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Fatalf("socket left: %v", err)
	}
	if !strings.Contains(errb.String(), `"message":"tracecell serve: listening"`) {
		t.Fatalf("log: %s", errb.String())
	}
}
