package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/tracecell/tracecell/config"
	"github.com/tracecell/tracecell/internal/syncbuf"
	"github.com/tracecell/tracecell/report"
	"github.com/tracecell/tracecell/tracer"
)

// Version is set at build time with -ldflags "-X main.Version=...".
var Version = "0.1.0-dev"

// Exit statuses of tracecell itself (the command's own status otherwise).
const (
	statusTimeout       = 124
	statusFailed        = 125
	statusNotExecutable = 126
	statusNotFound      = 127
)

// exitError carries an exit status out of a cli action.
type exitError struct {
	status int
	err    error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.status)
	}
	return e.err.Error()
}

// run is the whole CLI, testable without a process boundary.
func run(stdin io.Reader, stdout, stderr io.Writer, args []string) int {
	app := newApp(stdin, stdout, stderr)
	err := app.Run(args)
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(stderr, "tracecell: %s\n", oneLine(ee.err.Error()))
		}
		return ee.status
	}
	fmt.Fprintf(stderr, "tracecell: %s\n", oneLine(err.Error()))
	return statusFailed
}

func oneLine(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ") }

func newApp(stdin io.Reader, stdout, stderr io.Writer) *cli.App {
	return &cli.App{
		// A repeatable flag takes one value per use: urfave/cli otherwise
		// splits values at commas, so --write /srv/a,b would make /srv/a
		// and /srv/b writable and --env K=x,y would fail.
		DisableSliceFlagSeparator: true,
		Name:                      "tracecell",
		Usage:                     "run LLM-written code: read anywhere, write only inside a sandbox directory",
		Version:                   Version,
		Reader:                    stdin,
		Writer:                    stdout,
		ErrWriter:                 stderr,
		HideHelpCommand:           true,
		ExitErrHandler:            func(*cli.Context, error) {}, // statuses are handled by run
		Commands: []*cli.Command{
			{
				Name:      "run",
				Usage:     "run a command under the sandbox",
				ArgsUsage: "-- COMMAND [ARGS...]",
				Flags:     runFlags(),
				Action: func(c *cli.Context) error {
					return runAction(c, stdin, stdout, stderr)
				},
				OnUsageError: func(c *cli.Context, err error, _ bool) error {
					return &exitError{statusFailed, fmt.Errorf("%v (see tracecell run --help)", err)}
				},
			},
			serveCommand(stdout, stderr),
			mcpCommand(stdout, stderr),
			reportCommand(stdin, stdout, stderr),
			policyCommand(stdin, stdout, stderr),
		},
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return &exitError{statusFailed, fmt.Errorf("%v (see tracecell --help)", err)}
		},
		// Without a command: the help. With a word that is no command,
		// urfave/cli's default action says "No help topic for ..." and
		// exits 3; say what is wrong instead, and exit 125.
		Action: func(c *cli.Context) error {
			if !c.Args().Present() {
				return cli.ShowAppHelp(c)
			}
			var names []string
			for _, cmd := range c.App.VisibleCommands() {
				names = append(names, cmd.Name)
			}
			return &exitError{statusFailed, fmt.Errorf("unknown command %q: the commands are %s (see tracecell --help)",
				c.Args().First(), strings.Join(names, ", "))}
		},
	}
}

func runFlags() []cli.Flag {
	return fastNames([]cli.Flag{
		&cli.StringSliceFlag{Name: "write", Usage: "writable root `DIR` (repeatable; created if missing; default: a fresh directory under $TMPDIR)"},
		&cli.StringFlag{Name: "cwd", Usage: "working `DIR` of the command (default: the first writable root)"},
		&cli.StringSliceFlag{Name: "read", Usage: "restrict reads to `DIR` (repeatable) plus the writable roots and what the program needs to start"},
		&cli.StringSliceFlag{Name: "deny-read", Usage: "`PATH` never readable (repeatable), e.g. ~/.ssh"},
		&cli.StringSliceFlag{Name: "allow-exec", Usage: "`PROGRAM` the tree may exec after the initial command, or a directory or pattern of programs ('/usr/bin/*') (repeatable)"},
		&cli.StringFlag{Name: "net", Usage: "network: deny, loopback or allow (default deny)"},
		&cli.StringFlag{Name: "mode", Usage: "enforce, or audit (allow everything, report what would be denied)"},
		&cli.StringFlag{Name: "timeout", Usage: "kill the whole tree after `DURATION` (exit 124); 0, the default, is no limit"},
		&cli.StringFlag{Name: "cpu-time", Usage: "CPU time limit per process (`DURATION`, RLIMIT_CPU; 0, the default, is no limit)"},
		&cli.StringFlag{Name: "memory", Usage: "address-space limit per process (`SIZE`, RLIMIT_AS), e.g. 2G"},
		&cli.StringFlag{Name: "max-file-size", Usage: "largest file a process may write (`SIZE`, RLIMIT_FSIZE)"},
		&cli.IntFlag{Name: "max-procs", Usage: "most live processes in the tree (`N`, threads not counted)"},
		&cli.IntFlag{Name: "max-open-files", Usage: "open file limit per process (`N`, RLIMIT_NOFILE)"},
		&cli.StringSliceFlag{Name: "env", Usage: "set `KEY=VALUE` in the command's environment (repeatable)"},
		&cli.StringSliceFlag{Name: "keep-env", Usage: "pass `NAME` through from tracecell's environment (repeatable)"},
		&cli.StringSliceFlag{Name: "allow-device", Usage: "device `PATTERN` the tree may write, e.g. '/dev/nvidia*' (repeatable)"},
		&cli.StringSliceFlag{Name: "keep-cap", Usage: "capability `CAP` a tree started as root keeps besides the default file-access set, e.g. net_raw, or all (repeatable)"},
		&cli.StringSliceFlag{Name: "scratch", Usage: "create-only `DIR` (repeatable; default /dev/shm)"},
		&cli.StringFlag{Name: "report", Usage: "write the JSON report to `FILE` at exit"},
		&cli.StringFlag{Name: "trace", Usage: "write every decision, reads included, as JSON lines to `FILE`"},
		&cli.StringFlag{Name: "policy", Usage: "read settings from a YAML or JSON `FILE` (flags override it)"},
		&cli.StringFlag{Name: "log-level", Usage: "debug, info, warn or error (default warn)"},
		&cli.StringFlag{Name: "log-format", Usage: "text or json"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no notices on stderr (the report still has everything)"},
		&cli.BoolFlag{Name: "null-stdin", Usage: "give the command /dev/null as its stdin instead of tracecell's (a terminal opened by name is another matter: README Known gaps)"},
		&cli.BoolFlag{Name: "no-freeze", Usage: "do not stop the rest of the tree while a checked call runs: faster for threaded programs that write many files, but a hostile program can race the checks (trusted code only)"},
	})
}

// settingsFrom merges the policy file (if any) and the flags that were set.
func settingsFrom(c *cli.Context) (*config.Settings, error) {
	if err := checkEmptyFlags(c); err != nil {
		return nil, err
	}
	s := &config.Settings{}
	if f := c.String("policy"); f != "" {
		fs, err := config.LoadFile(f)
		if err != nil {
			return nil, err
		}
		s = fs
	}
	list := func(name string, dst *[]string) {
		if c.IsSet(name) {
			*dst = c.StringSlice(name)
		}
	}
	str := func(name string, dst *string) {
		if c.IsSet(name) {
			*dst = c.String(name)
		}
	}
	list("write", &s.Write)
	str("cwd", &s.Cwd)
	list("read", &s.Read)
	list("deny-read", &s.DenyRead)
	list("allow-exec", &s.AllowExec)
	str("net", &s.Net)
	str("mode", &s.Mode)
	list("keep-env", &s.KeepEnv)
	list("allow-device", &s.AllowDevice)
	list("keep-cap", &s.KeepCap)
	list("scratch", &s.Scratch)
	str("report", &s.Report)
	str("trace", &s.Trace)
	str("log-level", &s.LogLevel)
	str("log-format", &s.LogFormat)
	if c.IsSet("no-freeze") {
		s.NoFreeze = c.Bool("no-freeze")
	}
	if c.IsSet("quiet") {
		s.Quiet = c.Bool("quiet")
	}
	if c.IsSet("max-procs") {
		s.MaxProcs = c.Int("max-procs")
	}
	if c.IsSet("max-open-files") {
		s.MaxOpenFiles = c.Int("max-open-files")
	}
	for _, d := range []struct {
		name string
		dst  *config.Duration
	}{{"timeout", &s.Timeout}, {"cpu-time", &s.CPUTime}} {
		if c.IsSet(d.name) {
			if err := d.dst.UnmarshalText([]byte(c.String(d.name))); err != nil {
				return nil, fmt.Errorf("--%s: %w", d.name, err)
			}
		}
	}
	for _, d := range []struct {
		name string
		dst  *config.Size
	}{{"memory", &s.Memory}, {"max-file-size", &s.MaxFileSize}} {
		if c.IsSet(d.name) {
			if err := d.dst.UnmarshalText([]byte(c.String(d.name))); err != nil {
				return nil, fmt.Errorf("--%s: %w", d.name, err)
			}
		}
	}
	if c.IsSet("env") {
		if s.Env == nil {
			s.Env = map[string]string{}
		}
		for _, kv := range c.StringSlice("env") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return nil, fmt.Errorf("--env %q: want KEY=VALUE", kv)
			}
			s.Env[k] = v
		}
	}
	return s, nil
}

// pathFlags are the flags (of run, serve and mcp) whose value is a path, a
// path pattern or an address: given empty (`--write "$SBX"` with SBX
// unset), each is an error, never "the current directory" or "the default".
var pathFlags = []string{"write", "cwd", "read", "deny-read", "allow-exec", "allow-device", "scratch",
	"report", "trace", "policy", "state-dir", "token-file", "python", "listen"}

// checkEmptyFlags fails on the first path flag given with an empty value.
func checkEmptyFlags(c *cli.Context) error {
	for _, name := range pathFlags {
		if !c.IsSet(name) {
			continue
		}
		vals := c.StringSlice(name)
		if vals == nil {
			vals = []string{c.String(name)}
		}
		for _, v := range vals {
			if v == "" {
				return fmt.Errorf("--%s: empty value (an unset variable?): give a path, or leave the option out for its default", name)
			}
		}
	}
	return nil
}

func newLogger(stderr io.Writer, level, format string) (zerolog.Logger, error) {
	lvl := zerolog.WarnLevel
	if level != "" {
		l, err := zerolog.ParseLevel(level)
		if err != nil || level == "" {
			return zerolog.Nop(), fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
		}
		lvl = l
	}
	var w io.Writer = stderr
	switch format {
	case "", "text":
		w = zerolog.ConsoleWriter{Out: stderr, NoColor: true, PartsExclude: []string{zerolog.TimestampFieldName}}
	case "json":
	default:
		return zerolog.Nop(), fmt.Errorf("--log-format %q: want text or json", format)
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Str("component", "tracecell").Logger(), nil
}

// runAction is `tracecell run`: the settings become a plan, the plan a
// tracer configuration; tracecell's own outputs are opened, the command runs
// under the tracer, and the report says how it ended.
func runAction(c *cli.Context, stdin io.Reader, stdout, stderr io.Writer) error {
	if _, ok := stderr.(*os.File); !ok {
		// The notices (tracer thread) and os/exec's copy of the
		// command's stderr share this writer: serialise their writes.
		stderr = &syncbuf.Writer{W: stderr}
	}
	tracer.LimitHeap()
	argv := c.Args().Slice()
	s, log, err := runSettings(c, stderr)
	if err != nil {
		return &exitError{statusFailed, err}
	}
	plan, err := buildPlan(s, argv, stderr)
	if err != nil {
		return err
	}
	tcfg, err := plan.TracerConfig()
	if err != nil {
		return &exitError{statusFailed, err}
	}
	out, err := openOutputs(s, plan)
	if err != nil {
		return &exitError{statusFailed, err}
	}
	defer out.close()
	notices := &notifier{trace: out.trace, quiet: s.Quiet, json: s.LogFormat == "json", log: log, stderr: stderr}
	ctx, sigs := watchSignals()
	defer sigs.stop()
	ctx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	notices.stopRun = stopRun

	tcfg.TraceAll = s.Trace != ""
	tcfg.OnEvent = notices.event
	if out.report != nil {
		tcfg.OnRunning = report.Warm
	}
	tcfg.Stdin, tcfg.Stdout, tcfg.Stderr, tcfg.Log = stdin, stdout, stderr, log
	if c.Bool("null-stdin") {
		// The tracer opens /dev/null for a nil Stdin. In tracecell, a static
		// binary, rather than a shell in front of it: a dynamically linked
		// helper outside the sandbox would load whatever LD_PRELOAD the
		// caller's environment names.
		tcfg.Stdin = nil
	}
	log.Debug().Strs("argv", plan.Argv).Str("path", plan.Path).Strs("write", plan.Policy.WriteRoots).Msg("starting")
	started := time.Now()
	res, runErr := tracer.Run(ctx, tcfg)

	rep := planReport(plan, argv, started)
	status := recordOutcome(rep, plan, res, runErr, sigs, log)
	if runErr == nil {
		status = recordUntraced(rep, res, notices, status)
	}
	if runErr == nil {
		sayOutcome(res, plan, s.Quiet, stderr, log)
	}
	status = writeOutputs(rep, out, s.Trace, status, stderr)
	if runErr != nil {
		return &exitError{status, runErr}
	}
	if status != 0 {
		return &exitError{status: status}
	}
	return nil
}

// runSettings reads the settings of `tracecell run` and makes its logger.
func runSettings(c *cli.Context, stderr io.Writer) (*config.Settings, zerolog.Logger, error) {
	s, err := settingsFrom(c)
	if err != nil {
		return nil, zerolog.Nop(), err
	}
	log, err := newLogger(stderr, s.LogLevel, s.LogFormat)
	if err != nil {
		return nil, zerolog.Nop(), err
	}
	return s, log, nil
}

// buildPlan turns the settings into a plan and tells the operator what to
// know of it (warnings, a sandbox it created); a failure is an *exitError,
// written to the report when one was asked for.
func buildPlan(s *config.Settings, argv []string, stderr io.Writer) (*config.Plan, error) {
	plan, err := config.Build(s, argv, os.Environ())
	if err != nil {
		status := statusFailed
		var nf *config.NotFoundError
		if errors.As(err, &nf) {
			status = nf.Status
		}
		// The operator asked for a report: say why nothing ran.
		if s.Report != "" {
			writeBuildFailure(s, argv, err, status, stderr)
		}
		return nil, &exitError{status, err}
	}
	if !s.Quiet {
		for _, w := range plan.Warnings {
			fmt.Fprintf(stderr, "tracecell: warning: %s\n", w)
		}
	}
	if plan.SandboxCreated && !s.Quiet {
		fmt.Fprintf(stderr, "tracecell: sandbox %s (kept after the run)\n", plan.Sandbox)
	}
	return plan, nil
}

// writeBuildFailure writes the report of a run that never started: the
// error, and the exit status it gives.
func writeBuildFailure(s *config.Settings, argv []string, err error, status int, stderr io.Writer) {
	rep := &report.Report{Version: 1, Tracecell: Version, Command: argv, Started: time.Now().UTC(),
		Error: err.Error(), Exit: report.Exit{Code: -1, Status: status}, TracerPeakRSSKB: selfMaxRSS()}
	var werr error
	if p, perr := outputPath("--report", s.Report, givenRoots(s)); perr != nil {
		werr = perr
	} else if werr = rep.WriteFile(p); werr != nil {
		werr = fmt.Errorf("--report: %w", werr)
	}
	if werr != nil {
		fmt.Fprintf(stderr, "tracecell: %s\n", werr)
	}
}

// runOutputs are tracecell's own files of a run, opened before it starts.
type runOutputs struct {
	traceFile *os.File            // --trace's file; nil without --trace
	trace     *report.TraceWriter // writes to traceFile; nil without --trace
	report    *report.Target      // --report's directory and name; nil without --report
}

// openOutputs creates the trace file and opens the report's directory.
func openOutputs(s *config.Settings, plan *config.Plan) (*runOutputs, error) {
	// tracecell's own files never go through a link the tree may have
	// left in a writable or scratch root (see outfile.go).
	roots := append(append([]string{}, plan.Policy.WriteRoots...), plan.Policy.Scratch...)
	out := &runOutputs{}
	if s.Trace != "" {
		f, err := createOutput("--trace", s.Trace, roots)
		if err != nil {
			return nil, err
		}
		out.traceFile, out.trace = f, report.NewTraceWriter(f)
	}
	// Open the report's directory now, before the program runs: not only to
	// fail before a long run, but because the program may write where the
	// report lives. Resolved at exit, the path could lead wherever the
	// program pointed a symlink, and tracecell would create the report there.
	if s.Report != "" {
		p, err := outputPath("--report", s.Report, roots)
		if err != nil {
			out.close()
			return nil, err
		}
		out.report, err = report.OpenTarget(p)
		if err != nil {
			out.close()
			return nil, fmt.Errorf("--report: %w", err)
		}
	}
	return out, nil
}

// close closes what openOutputs opened.
func (o *runOutputs) close() {
	if o.report != nil {
		o.report.Close()
	}
	if o.traceFile != nil {
		o.traceFile.Close()
	}
}

// notifier hears the run's events (on the tracer thread): every one goes to
// the trace, a denial or audit also to stderr as a notice (a log line with
// --log-format json), unless quiet.
type notifier struct {
	trace  *report.TraceWriter // nil without --trace
	quiet  bool                // --quiet: no notices
	json   bool                // --log-format json: notices are log lines
	log    zerolog.Logger      // for the JSON notices
	stderr io.Writer           // for the text notices
	// stopRun ends the run (the tree is killed) when the trace fails.
	stopRun func()

	mu    sync.Mutex
	walks report.ExecWalks // guarded by mu
	// untraced: the denials from the event the trace failed on to the end
	// of the run, at most maxUntraced (untracedDropped counts the rest);
	// traceFailed: the trace failed. Guarded by mu.
	untraced        []report.Event
	untracedDropped int
	traceFailed     bool
}

// maxUntraced bounds notifier.untraced: the tree is killed at the trace's
// failure, so only the denials of the tasks still running until then come.
const maxUntraced = 1000

// event records ev: the tracer's OnEvent.
func (n *notifier) event(ev *report.Event) {
	if n.trace != nil {
		n.trace.Write(ev)
		if n.trace.Err() != nil {
			// The trace cannot be written any more (its disk is full,
			// possibly by the tree's doing): the run stops, like an audit
			// log that must not lose records, and the denials from here on
			// go to the report whatever its cap (round 51 of the red
			// team: past the report's 10,000 they were in neither file).
			n.noteUntraced(ev)
		}
	}
	if ev.Decision == report.Allow || n.quiet {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.walks.Continues(ev) {
		// One notice per PATH search of a refused program, printed at
		// its first try (whether more follow is not known yet); the
		// report lists every path tried, the trace every call.
		return
	}
	if n.json {
		n.log.Warn().Str("decision", ev.Decision).Str("syscall", ev.Syscall).Str("kind", ev.Kind.String()).
			Int("pid", ev.Pid).Int("tid", ev.Tid).Str("program", ev.Program).Interface("paths", ev.Paths).
			Str("address", ev.Address).Str("rule", string(ev.Rule)).Str("errno", ev.Errno).Msg(ev.Reason)
		return
	}
	fmt.Fprintln(n.stderr, ev.Notice())
}

// noteUntraced records ev, which the trace lacks, and stops the run at the
// first.
func (n *notifier) noteUntraced(ev *report.Event) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.traceFailed {
		n.traceFailed = true
		if n.stopRun != nil {
			n.stopRun()
		}
	}
	if ev.Decision == report.Allow {
		return
	}
	if len(n.untraced) < maxUntraced {
		n.untraced = append(n.untraced, *ev)
	} else {
		n.untracedDropped++
	}
}

// signalWatch cancels the run at SIGINT, SIGTERM, SIGHUP or SIGQUIT and
// keeps which signal it was. SIGQUIT (a terminal's Ctrl-\, which a PTY
// command's input can type) must not get Go's default action: a dump of
// tracecell's goroutines on the command's stderr and an exit without the
// report.
type signalWatch struct {
	sigs   chan os.Signal     // where signal.Notify delivers
	cancel context.CancelFunc // ends the run's context

	mu  sync.Mutex
	got syscall.Signal // guarded by mu: the signal received, 0 if none
}

// watchSignals starts a signalWatch; its context ends at the signal (or at
// stop).
func watchSignals() (context.Context, *signalWatch) {
	ctx, cancel := context.WithCancel(context.Background())
	w := &signalWatch{sigs: make(chan os.Signal, 1), cancel: cancel}
	signal.Notify(w.sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	go func() {
		select {
		case sg := <-w.sigs:
			w.mu.Lock()
			w.got = sg.(syscall.Signal)
			w.mu.Unlock()
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, w
}

// received is the signal that cancelled the run, 0 if none.
func (w *signalWatch) received() syscall.Signal {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.got
}

// exitsAfterRun is set by main, whose process exits as soon as run
// returns: the signal watch is then left to the exit. signal.Stop waits for
// the runtime's signal thread and, at the end of a run, made the runtime
// start a new thread to go on with (perf trace; 88 µs by the median of 200
// `run -- /bin/true`, bench VM). Tests call run without it.
var exitsAfterRun bool

// stop stops watching and ends the context.
func (w *signalWatch) stop() {
	if !exitsAfterRun {
		signal.Stop(w.sigs)
	}
	w.cancel()
}

// planReport is the report's part that the plan gives: the command, the
// sandbox, the effective policy and the limits.
func planReport(plan *config.Plan, argv []string, started time.Time) *report.Report {
	rep := &report.Report{
		Version: 1, Tracecell: Version, Command: argv, Cwd: plan.Cwd, Sandbox: plan.Sandbox,
		Policy: plan.Policy, Started: started.UTC(),
	}
	if len(plan.Rlimits) > 0 || plan.Timeout > 0 || plan.MaxProcs > 0 {
		rep.Limits = map[string]any{"timeout_seconds": plan.Timeout.Seconds(), "max_procs": plan.MaxProcs, "rlimits": plan.Rlimits}
	}
	return rep
}

// recordOutcome writes into rep how the run ended (res, or runErr when the
// tracer failed) and returns tracecell's exit status.
func recordOutcome(rep *report.Report, plan *config.Plan, res *tracer.Result, runErr error, sigs *signalWatch, log zerolog.Logger) int {
	if runErr != nil {
		var se *tracer.StartError
		status := statusFailed
		if errors.As(runErr, &se) {
			status = se.Status
		}
		rep.Error = runErr.Error()
		rep.Exit = report.Exit{Code: -1, Status: status}
		return status
	}
	rep.WallSeconds = res.Wall.Seconds()
	rep.CPUUserSeconds = res.CPUUser.Seconds()
	rep.CPUSystemSeconds = res.CPUSystem.Seconds()
	rep.PeakRSSKB = res.PeakRSSKB
	rep.Counts = res.Counts
	rep.NoFreeze = plan.NoFreeze
	if res.CapsDropped != 0 {
		rep.Capabilities = &report.Capabilities{Kept: res.CapsKept.Names(), Dropped: res.CapsDropped.Names()}
		log.Debug().Stringer("kept", res.CapsKept).Stringer("dropped", res.CapsDropped).Msg("capabilities of the tree")
	}
	rep.Denials = report.GroupExecWalks(res.Denials)
	rep.DenialsDropped = res.Dropped
	rep.ScratchLeft = res.ScratchLeft
	rep.Exit = report.Exit{Code: res.ExitCode, TimedOut: res.TimedOut}
	var status int
	switch {
	case res.TimedOut:
		status = statusTimeout
	case res.Signal != 0:
		status = 128 + int(res.Signal)
	default:
		status = res.ExitCode
	}
	if res.Signal != 0 {
		rep.Exit.Signal = signalName(res.Signal)
	}
	if got := sigs.received(); res.Interrupted && got != 0 {
		status = 128 + int(got)
		rep.Error = fmt.Sprintf("tracecell received %s: the tree was killed", signalName(got))
	}
	rep.Exit.Status = status
	return status
}

// recordUntraced puts what the notifier kept of a failed trace into the
// report (UntracedDenials) and returns the status: 125 when the trace
// failed, for it stopped the run.
func recordUntraced(rep *report.Report, res *tracer.Result, n *notifier, status int) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.traceFailed {
		return status
	}
	rep.UntracedDenials, rep.UntracedDropped = n.untraced, n.untracedDropped
	if res.Interrupted && rep.Error == "" {
		rep.Error = "the --trace file could not be written: the tree was killed (see trace_error)"
	}
	rep.Exit.Status = statusFailed
	return statusFailed
}

// sayOutcome tells the operator what the tracer did at the end of a run: a
// timeout, processes killed when the main program exited.
func sayOutcome(res *tracer.Result, plan *config.Plan, quiet bool, stderr io.Writer, log zerolog.Logger) {
	if res.TimedOut && !quiet {
		fmt.Fprintf(stderr, "tracecell: timeout after %s: the whole tree was killed\n", plan.Timeout)
	}
	if res.Counts.KilledAtExit > 0 {
		log.Info().Int("processes", res.Counts.KilledAtExit).Msg("main program exited; killed the rest of the tree")
	}
}

// writeOutputs writes the report and says whether the trace was written in
// full; it returns the exit status, 125 when the report or the trace of a
// successful run could not be written.
func writeOutputs(rep *report.Report, out *runOutputs, tracePath string, status int, stderr io.Writer) int {
	rep.TracerPeakRSSKB = selfMaxRSS()
	traceErr := out.trace != nil && out.trace.Err() != nil
	if traceErr {
		// Said in the report too: a tree that fills the disk the trace is
		// on must not leave a trace that looks whole.
		rep.TraceError = fmt.Sprintf("--trace %s: %v: the trace stops there and the run was stopped; the counts of this report are exact, and the denials the trace lacks are in untraced_denials", tracePath, out.trace.Err())
	}
	if out.report != nil {
		if err := rep.WriteTarget(out.report); err != nil {
			fmt.Fprintf(stderr, "tracecell: %s\n", err)
			if status == 0 {
				status = statusFailed
			}
		}
	}
	if traceErr {
		fmt.Fprintf(stderr, "tracecell: --trace %s: %v: the trace could not be written, so the tree was killed (the report lists the denials the trace lacks)\n", tracePath, out.trace.Err())
		if status == 0 {
			status = statusFailed
		}
	}
	return status
}

// givenRoots are the writable roots of s, resolved where they exist, for
// the checks of outputPath when config.Build failed before resolving them.
func givenRoots(s *config.Settings) []string {
	var roots []string
	for _, w := range s.Write {
		if a, err := config.Abs(w); err == nil && w != "" {
			if r, err := filepath.EvalSymlinks(a); err == nil {
				a = r
			}
			roots = append(roots, a)
		}
	}
	return roots
}

func signalName(s syscall.Signal) string {
	if n := unixSignalName(s); n != "" {
		return n
	}
	return fmt.Sprintf("signal %d", int(s))
}
