package server

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestGoAPI drives sessions through the Go API (fake workers).
func TestGoAPI(t *testing.T) {
	ctx := context.Background()
	t.Run("get-or-create keeps state", func(t *testing.T) {
		e := newEnv(t, nil)
		in, created, err := e.s.Session(ctx, "a")
		if err != nil || !created || in.ID != "a" || in.Sandbox == "" {
			t.Fatalf("first Session: %+v %v %v", in, created, err)
		}
		if _, err := e.s.Execute(ctx, "a", "set:x=41", 0); err != nil {
			t.Fatal(err)
		}
		again, created, err := e.s.Session(ctx, "a")
		if err != nil || created || again.Sandbox != in.Sandbox {
			t.Fatalf("second Session: %+v created=%v %v", again, created, err)
		}
		res, err := e.s.Execute(ctx, "a", "get:x", 0)
		if err != nil || res.Result == nil || *res.Result != "41" {
			t.Fatalf("get:x = %+v %v", res, err)
		}
		if d, err := e.s.Describe("a"); err != nil || d.Executions != 2 {
			t.Fatalf("Describe: %+v %v", d, err)
		}
	})
	for _, tc := range []struct {
		name string
		call func(*Server) error
		want error
	}{
		{"execute unknown", func(s *Server) error { _, err := s.Execute(ctx, "nope", "1", 0); return err }, ErrNotFound},
		{"delete unknown", func(s *Server) error { return s.Delete("nope") }, ErrNotFound},
		{"describe unknown", func(s *Server) error { _, err := s.Describe("nope"); return err }, ErrNotFound},
		{"open in unknown", func(s *Server) error { _, _, err := s.OpenFile("nope", "a.txt"); return err }, ErrNotFound},
		{"invalid id", func(s *Server) error { _, _, err := s.Session(ctx, "a/b"); return err }, ErrInvalidID},
		{"too many", func(s *Server) error {
			for _, id := range []string{"m1", "m2"} {
				if _, _, err := s.Session(ctx, id); err != nil {
					return err
				}
			}
			_, _, err := s.Session(ctx, "m3")
			return err
		}, ErrTooManySessions},
		{"after close", func(s *Server) error { s.Close(); _, _, err := s.Session(ctx, "c"); return err }, ErrShuttingDown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(o *Options) { o.MaxSessions = 2 })
			err := tc.call(e.s)
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			if err.Error() == "" || err.Error() == tc.want.Error() {
				t.Errorf("error %q does not carry the API's message", err)
			}
		})
	}
	t.Run("busy then delete", func(t *testing.T) {
		e := newEnv(t, nil)
		if _, _, err := e.s.Session(ctx, "b"); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			res, err := e.s.Execute(ctx, "b", "sleep:600000", 0)
			if err == nil && !res.SessionLost {
				err = errors.New("the long execution was not cut short by Delete")
			}
			done <- err
		}()
		for {
			if d, err := e.s.Describe("b"); err == nil && d.Busy {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		if _, err := e.s.Execute(ctx, "b", "1", 0); !errors.Is(err, ErrBusy) {
			t.Fatalf("second execution: %v, want ErrBusy", err)
		}
		if err := e.s.Delete("b"); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if _, err := e.s.Describe("b"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("after Delete: %v", err)
		}
		if n := e.fs.alive(); n != 1 { // the pool's warm worker only
			t.Fatalf("%d workers alive after Delete, want the pool's 1", n)
		}
	})
	t.Run("timeout capped", func(t *testing.T) {
		e := newEnv(t, func(o *Options) { o.ExecTimeout = 50 * time.Millisecond })
		if _, _, err := e.s.Session(ctx, "t"); err != nil {
			t.Fatal(err)
		}
		res, err := e.s.Execute(ctx, "t", "sleep:600000", time.Hour)
		if err != nil || !res.TimedOut {
			t.Fatalf("a timeout above --exec-timeout was not cut to it: %+v %v", res, err)
		}
	})
	t.Run("limits", func(t *testing.T) {
		e := newEnv(t, func(o *Options) { o.Settings.Net = ""; o.Settings.Memory = 1 << 30 })
		l := e.s.Limits()
		if l.Net != "deny" || l.Memory != 1<<30 || l.ExecTimeout != 10*time.Second || l.StateDir == "" || l.IdleTimeout != 0 {
			t.Fatalf("Limits %+v", l)
		}
	})
}
