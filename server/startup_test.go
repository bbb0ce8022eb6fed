package server

import (
	"context"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tracecell/tracecell/config"
	"github.com/tracecell/tracecell/internal/syncbuf"
)

// TestRunProbesAWorker: Run starts one worker before it serves. When that
// fails it returns the reason and never calls Ready nor says it listens;
// when it works, the worker joins the pool and every worker's policy names
// the server's own socket as never reachable.
func TestRunProbesAWorker(t *testing.T) {
	for _, fail := range []bool{true, false} {
		name := map[bool]string{true: "failing", false: "working"}[fail]
		t.Run(name, func(t *testing.T) {
			dir, err := os.MkdirTemp("", "tc")
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(dir)
			fs := &fakeStarter{}
			fs.fail.Store(fail)
			logs := &syncbuf.Buffer{}
			sock := filepath.Join(dir, "s.sock")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ready := make(chan string, 1)
			done := make(chan error, 1)
			go func() {
				done <- Run(ctx, Options{
					Listen: "unix:" + sock, StateDir: filepath.Join(dir, "state"), PoolSize: 1,
					Starter: fs.start, Log: zerolog.New(logs), Ready: func(a string) { ready <- a },
				})
			}()
			if fail {
				select {
				case err := <-done:
					if err == nil || !strings.Contains(err.Error(), "no Python worker can start") || !strings.Contains(err.Error(), "fake start failure") {
						t.Fatalf("Run = %v, want the start failure", err)
					}
				case <-ready:
					t.Fatal("Ready was called: the server serves without a worker")
				case <-time.After(10 * time.Second):
					t.Fatal("Run did not return")
				}
				if strings.Contains(logs.String(), "listening") {
					t.Errorf("the log says it listens: %s", logs.String())
				}
				if _, err := os.Lstat(sock); !os.IsNotExist(err) {
					t.Errorf("the socket is left: %v", err)
				}
				return
			}
			select {
			case <-ready:
			case err := <-done:
				t.Fatalf("Run: %v", err)
			case <-time.After(10 * time.Second):
				t.Fatal("not ready")
			}
			fs.mu.Lock()
			n := len(fs.started)
			var eps string
			if n > 0 {
				eps = strings.Join([]string{fs.started[0].cfg.Unreachable[0].Unix}, ",")
			}
			fs.mu.Unlock()
			if n != 1 {
				t.Errorf("%d workers started for a pool of 1: the probe's should be the pool's", n)
			}
			want, _ := filepath.EvalSymlinks(dir)
			if want = filepath.Join(want, "s.sock"); eps != want {
				t.Errorf("the worker's never-reachable socket is %q, want %q", eps, want)
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestAbsSettings: ~ and relative paths of the policy are made absolute by
// the server (the worker-hosts have no HOME); a ~ without HOME is an error
// naming the key; allow_exec names without a slash stay names.
func TestAbsSettings(t *testing.T) {
	t.Setenv("HOME", "/home/op")
	wd, _ := os.Getwd()
	st, err := absSettings(config.Settings{
		DenyRead: []string{"~/.ssh", "/srv/app/.env", "rel/x"}, Read: []string{"~"}, Write: []string{"~/shared"},
		AllowExec: []string{"git", "~/bin/tool", "./local"}, Scratch: nil,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ got, want []string }{
		{st.DenyRead, []string{"/home/op/.ssh", "/srv/app/.env", filepath.Join(wd, "rel/x")}},
		{st.Read, []string{"/home/op"}},
		{st.Write, []string{"/home/op/shared"}},
		{st.AllowExec, []string{"git", "/home/op/bin/tool", "./local"}},
	} {
		if strings.Join(c.got, ",") != strings.Join(c.want, ",") {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	if st.Scratch != nil {
		t.Errorf("scratch nil (the default) became %q", st.Scratch)
	}
	// ~user (red team 2, F4): that user's home, in every key; an unknown
	// user is an error naming the key.
	if me, err := user.Current(); err == nil {
		st, err := absSettings(config.Settings{DenyRead: []string{"~" + me.Username + "/.ssh"}, AllowExec: []string{"~" + me.Username + "/bin/t"}})
		if err != nil || st.DenyRead[0] != filepath.Join(me.HomeDir, ".ssh") || st.AllowExec[0] != filepath.Join(me.HomeDir, "bin/t") {
			t.Errorf("~%s: %q %q %v", me.Username, st.DenyRead, st.AllowExec, err)
		}
	}
	for _, k := range []struct {
		key string
		st  config.Settings
	}{
		{"deny_read", config.Settings{DenyRead: []string{"~tc-no-such-user-42/.ssh"}}},
		{"write", config.Settings{Write: []string{"~tc-no-such-user-42/w"}}},
		{"allow_exec", config.Settings{AllowExec: []string{"~tc-no-such-user-42/bin/t"}}},
	} {
		if _, err := absSettings(k.st); err == nil || !strings.Contains(err.Error(), "policy "+k.key+" ~tc-no-such-user-42/") || !strings.Contains(err.Error(), "no user named") {
			t.Errorf("%s ~tc-no-such-user-42: %v, want an error naming the key and the user", k.key, err)
		}
	}
	os.Unsetenv("HOME")
	if _, err := absSettings(config.Settings{DenyRead: []string{"~/.aws"}}); err == nil || !strings.Contains(err.Error(), "deny_read ~/.aws") {
		t.Errorf("without HOME: %v, want an error naming deny_read ~/.aws", err)
	}
}
