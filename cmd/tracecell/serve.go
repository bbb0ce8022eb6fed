package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tracecell/tracecell/config"
	"github.com/tracecell/tracecell/server"
	"github.com/tracecell/tracecell/tracer"
)

// serveCommand is `tracecell serve`: the session server (package server).
func serveCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "serve stateful Python sessions over an HTTP/JSON API (see api/openapi.yaml)",
		Flags: serveFlags(),
		Action: func(c *cli.Context) error {
			return serveAction(c, stderr)
		},
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return &exitError{statusFailed, fmt.Errorf("%v (see tracecell serve --help)", err)}
		},
	}
}

// serveFlags are the server's own flags plus the policy flags of `run`
// (every session runs under that one operator policy).
func serveFlags() []cli.Flag {
	skip := map[string]bool{"cwd": true, "report": true, "trace": true, "quiet": true, "timeout": true}
	fl := []cli.Flag{
		&cli.StringFlag{Name: "listen", Usage: "`ADDR`: unix:PATH (default unix:<state-dir>/tracecell.sock) or 127.0.0.1:PORT"},
		&cli.StringFlag{Name: "state-dir", Usage: "`DIR` holding the session sandboxes (default $XDG_STATE_HOME/tracecell or /var/tmp/tracecell-<uid>)"},
		&cli.StringFlag{Name: "token-file", Usage: "`FILE` holding a bearer token required on every request but /healthz (needed with --allow-remote)"},
		&cli.BoolFlag{Name: "allow-remote", Usage: "allow a TCP address that is not loopback (requires --token-file)"},
		&cli.BoolFlag{Name: "allow-other-users", Usage: "on loopback TCP without a token, serve clients of any local user (default: only the server's own uid; the code runs as that uid)"},
		&cli.IntFlag{Name: "pool-size", Value: 2, Usage: "warm workers kept ready (`N`, 0: none)"},
		&cli.StringSliceFlag{Name: "preload", Usage: "`MODULE` imported by every worker before it is used, e.g. numpy,pandas,matplotlib.pyplot (repeatable)"},
		&cli.IntFlag{Name: "max-sessions", Value: 64, Usage: "most sessions plus running one-shot executions (`N`)"},
		&cli.StringFlag{Name: "idle-timeout", Value: "30m", Usage: "close a session unused for `DURATION` (0: never)"},
		&cli.StringFlag{Name: "exec-timeout", Value: "60s", Usage: "default and maximum `DURATION` of one execution (a request may only lower it)"},
		&cli.StringFlag{Name: "max-output", Value: "1M", Usage: "cap on stdout and stderr of one execution, each (`SIZE`)"},
		&cli.StringFlag{Name: "max-copy-size", Value: "1G", Usage: "cap on the bytes of one copy into a sandbox (`SIZE`)"},
		&cli.StringFlag{Name: "max-body", Value: "10M", Usage: "cap on request bodies (`SIZE`)"},
		&cli.StringFlag{Name: "python", Usage: "Python interpreter `PATH` (default /usr/bin/python3, else python3 in PATH)"},
		&cli.BoolFlag{Name: "keep-sandboxes", Usage: "keep the sandboxes of deleted sessions and one-shot runs"},
		&cli.StringFlag{Name: "cell-id", Usage: "`NAME` of this server among others behind one proxy, in every answer and in the ids it makes (default: the host name up to its first dot)"},
		&cli.StringFlag{Name: "drain-timeout", Value: "0", Usage: "on SIGTERM, stop creating sessions and serve the open ones for up to `DURATION` before stopping (0: stop at once; a second signal cuts the drain short)"},
	}
	for _, f := range runFlags() {
		switch name := f.Names()[0]; {
		case skip[name]:
		case name == "write":
			fl = append(fl, &cli.StringSliceFlag{Name: "write", Usage: "extra writable root `DIR` shared by every session, besides its own sandbox (repeatable)"})
		default:
			fl = append(fl, f)
		}
	}
	return fastNames(fl)
}

func serveAction(c *cli.Context, stderr io.Writer) error {
	o, err := serverOptions(c, stderr, "serve")
	if err != nil {
		return err
	}
	return runServer(o)
}

// serverOptions turns the flags of serveFlags into server options (the
// policy file and flags, limits, token, logger); cmd names the command in
// errors. Shared by serve and mcp.
func serverOptions(c *cli.Context, stderr io.Writer, cmd string) (server.Options, error) {
	fail := func(err error) (server.Options, error) { return server.Options{}, &exitError{statusFailed, err} }
	if c.Args().Len() > 0 {
		return fail(fmt.Errorf("%s takes no arguments, got %q", cmd, c.Args().Slice()))
	}
	s, err := settingsFrom(c)
	if err != nil {
		return fail(err)
	}
	level := s.LogLevel
	if level == "" {
		level = "info"
	}
	log, err := newLogger(stderr, level, s.LogFormat)
	if err != nil {
		return fail(err)
	}
	o := server.Options{
		Listen: c.String("listen"), StateDir: c.String("state-dir"), AllowRemote: c.Bool("allow-remote"),
		AllowOtherUsers: c.Bool("allow-other-users"),
		Settings:        *s, Python: c.String("python"), PoolSize: c.Int("pool-size"),
		MaxSessions: c.Int("max-sessions"), KeepSandboxes: c.Bool("keep-sandboxes"), Log: log,
		CellID: c.String("cell-id"),
	}
	if o.PoolSize == 0 {
		o.PoolSize = -1 // none
	}
	if o.CellID != "" {
		if err := server.CheckCellID(o.CellID); err != nil {
			return fail(err)
		}
	}
	if o.PoolSize < -1 || o.MaxSessions < 1 {
		return fail(fmt.Errorf("--pool-size must be 0 or more and --max-sessions 1 or more"))
	}
	for _, m := range c.StringSlice("preload") {
		for _, x := range strings.Split(m, ",") {
			if x = strings.TrimSpace(x); x != "" {
				o.Preload = append(o.Preload, x)
			}
		}
	}
	for _, d := range []struct {
		name string
		dst  *time.Duration
	}{{"idle-timeout", &o.IdleTimeout}, {"exec-timeout", &o.ExecTimeout}, {"drain-timeout", &o.DrainTimeout}} {
		v, err := config.ParseDuration(c.String(d.name))
		if err != nil {
			return fail(fmt.Errorf("--%s: %w", d.name, err))
		}
		*d.dst = v
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = -1 // never
	}
	// The policy file's timeout is the whole run's for `tracecell run`; for
	// a server the closest meaning is the time of one execution.
	if s.Timeout > 0 && !c.IsSet("exec-timeout") {
		o.ExecTimeout = time.Duration(s.Timeout)
	}
	if s.NoFreeze {
		log.Warn().Msg("no_freeze is set: checked calls of threaded or multi-process code are not protected against races; use it only for trusted code")
	}
	for _, k := range unusedByServer(s) {
		log.Warn().Str("policy", c.String("policy")).Str("key", k).
			Msgf("policy key %q is not used by tracecell %s (denials are in each result and in this log); ignored", k, cmd)
	}
	if o.ExecTimeout <= 0 {
		return fail(fmt.Errorf("--exec-timeout must be above 0"))
	}
	for _, d := range []struct {
		name string
		set  func(uint64)
	}{
		{"max-output", func(v uint64) { o.MaxOutput = int(v) }},
		{"max-copy-size", func(v uint64) { o.MaxCopySize = int64(v) }},
		{"max-body", func(v uint64) { o.MaxBody = int64(v) }},
	} {
		v, err := config.ParseSize(c.String(d.name))
		if err != nil || v == 0 {
			return fail(fmt.Errorf("--%s %q: want a size above 0, e.g. 1M", d.name, c.String(d.name)))
		}
		d.set(v)
	}
	if f := c.String("token-file"); f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return fail(fmt.Errorf("--token-file: %w", err))
		}
		o.Token = strings.TrimSpace(string(b))
		if o.Token == "" || strings.ContainsAny(o.Token, " \t\r\n") {
			return fail(fmt.Errorf("--token-file %s: want one token on one line", f))
		}
		if st, err := os.Stat(f); err == nil && st.Mode().Perm()&0o077 != 0 {
			log.Warn().Str("file", f).Msg("the token file is readable by other users; chmod 600 it")
		}
		// The code reads the host: it must not read the token (with it,
		// whoever the code hands it to could drive this server).
		if a, err := filepath.Abs(f); err == nil {
			if r, err := filepath.EvalSymlinks(a); err == nil {
				a = r
			}
			o.Settings.DenyRead = append(append([]string(nil), o.Settings.DenyRead...), a)
		}
	}
	o.Starter = server.RealStarter(log)
	return o, nil
}

// unusedByServer names the policy keys that only mean something to
// `tracecell run` (one command, one report).
func unusedByServer(s *config.Settings) []string {
	var keys []string
	for _, k := range []struct {
		name string
		set  bool
	}{{"report", s.Report != ""}, {"trace", s.Trace != ""}, {"cwd", s.Cwd != ""}, {"quiet", s.Quiet}} {
		if k.set {
			keys = append(keys, k.name)
		}
	}
	return keys
}

// runServer serves until SIGINT, SIGTERM or SIGHUP, then shuts down cleanly:
// with --drain-timeout, SIGTERM (what Kubernetes sends a pod it deletes)
// first drains (server/drain.go); SIGINT, SIGHUP or a second signal stop
// at once.
// The server is not dumpable, like every tracer it starts (tracer.HideProc):
// its environment, memory and fds (other sessions' pipes) are no code's to
// read through /proc, even past the read check every session has.
func runServer(o server.Options) error {
	if err := tracer.HideProc(); err != nil {
		return &exitError{statusFailed, err}
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	kill := make(chan struct{})
	o.Kill = kill
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(ch)
	go func() {
		sig := <-ch
		if sig != syscall.SIGTERM {
			close(kill) // no drain
		}
		stop()
		if sig == syscall.SIGTERM {
			<-ch // a second signal cuts the drain short
			close(kill)
		}
	}()
	if err := server.Run(ctx, o); err != nil {
		return &exitError{statusFailed, err}
	}
	return nil
}
