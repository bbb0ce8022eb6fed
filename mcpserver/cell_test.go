package mcpserver

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tracecell/tracecell/server"
)

// TestHonestMiss: behind a proxy that rehashed, or after a restart, the
// MCP path's get-or-create must not hand the model an empty session as if
// it were the old one: the first text content says the earlier session is
// gone and why; X-Tracecell-No-Create makes the call fail instead (and
// nothing is created); another cell's session id is never made here.
func TestHonestMiss(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	e := newTestEnv(t, func(o *server.Options) { o.CellID = "cell-a"; o.StateDir = state })
	hdr := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	cs := e.connect(hdr(HeaderSession, "proj"))
	if text := python(t, cs, "x = 5"); !strings.Contains(text, `cell "cell-a"`) || strings.Contains(text, "NOTE") {
		t.Fatalf("first call:\n%s", text)
	}
	if err := e.srv.Delete("proj"); err != nil {
		t.Fatal(err)
	}
	strict := e.connect(hdr(HeaderSession, "proj", HeaderNoCreate, "1"))
	text, res := call(t, strict, "python", map[string]any{"code": "x"})
	if !res.IsError || !strings.Contains(text, "deleted by a client") || !strings.Contains(text, "nothing was created") {
		t.Fatalf("no-create call for a deleted session: %v\n%s", res.IsError, text)
	}
	if _, err := e.srv.Describe("proj"); err == nil {
		t.Fatal("a session was created despite " + HeaderNoCreate)
	}
	text = python(t, cs, "x")
	if !strings.HasPrefix(text, `[NOTE: the earlier session "proj" is gone and this is a NEW, EMPTY one: session "proj" on cell "cell-a" was deleted`) ||
		!strings.Contains(text, "NameError") {
		t.Fatalf("get-or-create after a delete:\n%s", text)
	}
	other := e.connect(hdr(HeaderSession, "cell-b.s-0123456789abcdef"))
	text, res = call(t, other, "python", map[string]any{"code": "1"})
	if !res.IsError || !strings.Contains(text, `belongs to cell "cell-b"`) {
		t.Fatalf("another cell's session: %v\n%s", res.IsError, text)
	}
	if _, err := e.srv.Describe("cell-b.s-0123456789abcdef"); err == nil {
		t.Fatal("another cell's session was created here")
	}
	// The cell restarts under the same name: the session is lost, and
	// the next call says so.
	python(t, cs, "y = 1")
	e.srv.Close()
	srv2, err := server.New(server.Options{StateDir: state, CellID: "cell-a", Starter: server.RealStarter(zerolog.Nop()),
		Log: zerolog.Nop(), PoolSize: -1, IdleTimeout: -1, ExecTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv2.Close)
	m2, err := New(Options{Server: srv2, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	e2 := &env{t: t, srv: srv2, m: m2}
	text, res = call(t, e2.connect(hdr(HeaderSession, "proj", HeaderNoCreate, "yes")), "python", map[string]any{"code": "y"})
	if !res.IsError || !strings.Contains(text, "lost in an earlier boot") || !strings.Contains(text, "stopped") {
		t.Fatalf("no-create after a restart: %v\n%s", res.IsError, text)
	}
	text = python(t, e2.connect(hdr(HeaderSession, "proj")), "y")
	if !strings.Contains(text, "[NOTE: the earlier session \"proj\" is gone") || !strings.Contains(text, "lost in an earlier boot") || !strings.Contains(text, "NameError") {
		t.Fatalf("get-or-create after a restart:\n%s", text)
	}
}
