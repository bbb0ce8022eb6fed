package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tracecell/tracecell/server"
)

// serverOptionsFor parses args as `tracecell serve` would and returns the options.
func serverOptionsFor(t *testing.T, args ...string) (server.Options, string) {
	t.Helper()
	var o server.Options
	var oerr error
	var log bytes.Buffer
	app := &cli.App{Flags: serveFlags(), Action: func(c *cli.Context) error {
		o, oerr = serverOptions(c, &log, "serve")
		return nil
	}}
	if err := app.Run(append([]string{"serve"}, args...)); err != nil {
		t.Fatal(err)
	}
	if oerr != nil {
		t.Fatal(oerr)
	}
	return o, log.String()
}

// The policy file's run-only keys: timeout becomes the execution timeout
// (unless --exec-timeout is given); report, trace, cwd and quiet are
// ignored with one warning line each naming the key.
func TestServePolicyRunKeys(t *testing.T) {
	pol := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(pol, []byte("timeout: 7s\nreport: /tmp/r.json\ntrace: /tmp/t.jsonl\nnet: deny\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want time.Duration
	}{
		{"policy-timeout", []string{"--policy", pol}, 7 * time.Second},
		{"flag-wins", []string{"--policy", pol, "--exec-timeout", "3s"}, 3 * time.Second},
		{"default", nil, 60 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, log := serverOptionsFor(t, tc.args...)
			if o.ExecTimeout != tc.want {
				t.Errorf("exec timeout %v, want %v", o.ExecTimeout, tc.want)
			}
			warned := strings.Count(log, "is not used by tracecell serve")
			if want := map[bool]int{true: 2, false: 0}[tc.args != nil]; warned != want {
				t.Errorf("%d warnings, want %d: %s", warned, want, log)
			}
			if tc.args != nil && (!strings.Contains(log, `policy key \"report\"`) && !strings.Contains(log, `policy key "report"`)) {
				t.Errorf("no warning names report: %s", log)
			}
		})
	}
}

// The token file is never readable by the code the server runs (the code
// reads the host, and with the token anyone it hands it to could drive the
// server): it is added to deny_read.
func TestServeTokenFileDenied(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Symlink(tok, filepath.Join(dir, "link"))
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"absolute", []string{"--token-file", tok}},
		{"through a symlink", []string{"--token-file", filepath.Join(dir, "link")}},
		{"with a deny-read flag", []string{"--token-file", tok, "--deny-read", "/nonexistent"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, _ := serverOptionsFor(t, tc.args...)
			if o.Token != "s3cret" {
				t.Fatalf("token %q", o.Token)
			}
			found := false
			for _, d := range o.Settings.DenyRead {
				if d == tok {
					found = true
				}
			}
			if !found {
				t.Fatalf("deny_read %v does not hold the token file %s", o.Settings.DenyRead, tok)
			}
		})
	}
}

func TestServeAllowOtherUsers(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want bool
	}{{"default", nil, false}, {"flag", []string{"--allow-other-users"}, true}} {
		t.Run(tc.name, func(t *testing.T) {
			if o, _ := serverOptionsFor(t, tc.args...); o.AllowOtherUsers != tc.want {
				t.Fatalf("AllowOtherUsers %v, want %v", o.AllowOtherUsers, tc.want)
			}
		})
	}
}

// --cell-id and --drain-timeout reach the server; a bad value is one line
// naming the flag.
func TestServeCellFlags(t *testing.T) {
	o, _ := serverOptionsFor(t, "--cell-id", "tracecell-2", "--drain-timeout", "45s")
	if o.CellID != "tracecell-2" || o.DrainTimeout != 45*time.Second {
		t.Fatalf("cell %q drain %v", o.CellID, o.DrainTimeout)
	}
	if o, _ := serverOptionsFor(t); o.CellID != "" || o.DrainTimeout != 0 {
		t.Fatalf("defaults: cell %q (empty: the host name, chosen by the server) drain %v", o.CellID, o.DrainTimeout)
	}
	for _, tc := range []struct{ name, flag, value, want string }{
		{"dotted cell", "--cell-id", "a.b", "--cell-id"},
		{"long cell", "--cell-id", strings.Repeat("c", 64), "1 to 63"},
		{"bad drain", "--drain-timeout", "soon", "--drain-timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var oerr error
			app := &cli.App{Flags: serveFlags(), Action: func(c *cli.Context) error {
				_, oerr = serverOptions(c, io.Discard, "serve")
				return nil
			}}
			if err := app.Run([]string{"serve", tc.flag, tc.value}); err != nil {
				t.Fatal(err)
			}
			if oerr == nil || !strings.Contains(oerr.Error(), tc.want) || strings.Contains(oerr.Error(), "\n") {
				t.Fatalf("%s %s: %v", tc.flag, tc.value, oerr)
			}
		})
	}
}
