package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"go.yaml.in/yaml/v3"
	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/audit"
	"github.com/tracecell/tracecell/config"
	"github.com/tracecell/tracecell/report"
)

// reportCommand is `tracecell report`: a report a person reads, from what
// run --report, run --trace or a session server recorded.
func reportCommand(stdin io.Reader, stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "summarise a --report or --trace file, or a server session, as text, markdown, html or json",
		ArgsUsage: "FILE|URL... (- for stdin)",
		Flags: fastNames([]cli.Flag{
			&cli.StringFlag{Name: "format", Aliases: []string{"f"}, Value: "text", Usage: "text, markdown, html or json"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write to `FILE` instead of stdout"},
			&cli.StringFlag{Name: "color", Value: "auto", Usage: "colours in text: auto (a terminal, and NO_COLOR unset), always or never"},
			&cli.StringFlag{Name: "server", Usage: "session server `ADDR` (unix:PATH or http://HOST:PORT) to fetch --session's report from"},
			&cli.StringFlag{Name: "session", Usage: "session `ID` whose report to fetch from --server"},
			&cli.StringFlag{Name: "token-file", Usage: "`FILE` holding the server's bearer token (default: $TRACECELL_TOKEN)"},
		}),
		Action: func(c *cli.Context) error {
			format := c.String("format")
			if !validFormat(format) {
				return &exitError{statusFailed, fmt.Errorf("--format %q: want text, markdown, html or json", format)}
			}
			s, err := readInputs(c, stdin, stderr)
			if err != nil {
				return &exitError{statusFailed, err}
			}
			var color bool
			switch c.String("color") {
			case "auto":
				color = c.String("output") == "" && isTerminal(stdout) && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
			case "always":
				color = true
			case "never":
			default:
				return &exitError{statusFailed, fmt.Errorf("--color %q: want auto, always or never", c.String("color"))}
			}
			return writeOut(c.String("output"), stdout, func(w io.Writer) error {
				return audit.Render(w, s, format, audit.Options{Color: color})
			})
		},
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return &exitError{statusFailed, fmt.Errorf("%v (see tracecell report --help)", err)}
		},
	}
}

// policyCommand is `tracecell policy suggest|check`.
func policyCommand(stdin io.Reader, stdout, stderr io.Writer) *cli.Command {
	usageErr := func(c *cli.Context, err error, _ bool) error {
		return &exitError{statusFailed, fmt.Errorf("%v (see tracecell policy --help)", err)}
	}
	return &cli.Command{
		Name:  "policy",
		Usage: "learn a policy from an audit-mode run (suggest), or validate a policy file (check)",
		Subcommands: []*cli.Command{
			{
				Name:      "suggest",
				Usage:     "print a policy (YAML, commented) allowing exactly what a recorded run did; record it with run --mode audit --report FILE",
				ArgsUsage: "FILE|URL...",
				Flags: fastNames([]cli.Flag{
					&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write to `FILE` instead of stdout"},
					&cli.StringFlag{Name: "server", Usage: "session server `ADDR` (unix:PATH or http://HOST:PORT)"},
					&cli.StringFlag{Name: "session", Usage: "session `ID` whose decisions to learn from"},
					&cli.StringFlag{Name: "token-file", Usage: "`FILE` holding the server's bearer token (default: $TRACECELL_TOKEN)"},
				}),
				Action: func(c *cli.Context) error {
					s, err := readInputs(c, stdin, stderr)
					if err != nil {
						return &exitError{statusFailed, err}
					}
					sg := audit.Suggest(s)
					for _, u := range sg.Ungrantable {
						fmt.Fprintf(stderr, "tracecell: warning: no policy can allow %s\n", report.Visible(u))
					}
					for _, l := range []struct {
						key string
						l   []audit.Grant
					}{{"read", sg.Read}, {"allow_exec", sg.AllowExec}, {"allow_device", sg.Devices}} {
						for _, g := range l.l {
							if g.NotSuggested != "" {
								fmt.Fprintf(stderr, "tracecell: warning: %s %s not suggested: %s\n", l.key, report.Visible(g.Value), report.Visible(g.NotSuggested))
							}
						}
					}
					for _, i := range sg.Incomplete {
						fmt.Fprintf(stderr, "tracecell: warning: the suggestion may be incomplete: %s\n", report.Visible(i))
					}
					return writeOut(c.String("output"), stdout, sg.WriteYAML)
				},
				OnUsageError: usageErr,
			},
			{
				Name:      "check",
				Usage:     "validate a policy file and print the effective policy",
				ArgsUsage: "FILE",
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return &exitError{statusFailed, fmt.Errorf("policy check: give one policy FILE (YAML or JSON), e.g. tracecell policy check policy.yaml")}
					}
					return policyCheck(c.Args().First(), stdout)
				},
				OnUsageError: usageErr,
			},
			{
				Name:      "resolve",
				Usage:     "print a policy file as JSON with its paths made absolute here (~ expanded with this HOME)",
				ArgsUsage: "FILE",
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return &exitError{statusFailed, fmt.Errorf("policy resolve: give one policy FILE (YAML or JSON), e.g. tracecell policy resolve policy.yaml")}
					}
					return policyResolve(c.Args().First(), stdout)
				},
				OnUsageError: usageErr,
			},
		},
		OnUsageError: usageErr,
	}
}

func validFormat(f string) bool {
	for _, x := range audit.Formats {
		if f == x {
			return true
		}
	}
	return f == "md"
}

// readInputs reads the command's FILE and URL arguments (and --server
// --session) into a summary, with a progress line on a terminal.
func readInputs(c *cli.Context, stdin io.Reader, stderr io.Writer) (*audit.Summary, error) {
	args := c.Args().Slice()
	for _, a := range args {
		if strings.HasPrefix(a, "-") && a != "-" {
			if _, err := os.Stat(a); err != nil {
				return nil, fmt.Errorf("%s after the input files: put the options first, e.g. tracecell %s --format html -o out.html FILE", a, c.Command.FullName())
			}
		}
	}
	if c.String("session") != "" || c.String("server") != "" {
		if c.String("session") == "" || c.String("server") == "" {
			return nil, fmt.Errorf("--server and --session go together: e.g. --server unix:/var/tmp/tracecell-1000/tracecell.sock --session s1")
		}
		args = append(args, "session:"+c.String("session"))
	}
	if len(args) == 0 {
		return nil, fmt.Errorf("no input: give a FILE written by tracecell run --report or --trace, a session report URL, or --server and --session")
	}
	var progress audit.Progress
	if isTerminal(stderr) {
		shown := false
		progress = func(name string, events, bytes int64) {
			shown = true
			fmt.Fprintf(stderr, "\rtracecell: reading %s: %d events, %.1f MB", filepath.Base(name), events, float64(bytes)/1e6)
		}
		defer func() {
			if shown {
				fmt.Fprint(stderr, "\r\x1b[K") // the report starts on a clean line
			}
		}()
	}
	a := audit.NewAggregator()
	var files []string
	flush := func() error {
		err := audit.ReadFiles(a, files, stdin, progress)
		files = nil
		return err
	}
	for _, arg := range args {
		if !strings.HasPrefix(arg, "http://") && !strings.HasPrefix(arg, "https://") && !strings.HasPrefix(arg, "session:") {
			files = append(files, arg)
			continue
		}
		if err := flush(); err != nil {
			return nil, err
		}
		body, name, err := fetchSessionReport(c, arg)
		if err != nil {
			return nil, err
		}
		err = audit.Read(a, body, name, progress)
		body.Close()
		if err != nil {
			return nil, err
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return a.Summary(), nil
}

// fetchSessionReport GETs a session's report: arg is a URL, or
// "session:ID" for --server's /v1/sessions/ID/report.
func fetchSessionReport(c *cli.Context, arg string) (io.ReadCloser, string, error) {
	client := &http.Client{Timeout: 60 * time.Second}
	u := arg
	if id, ok := strings.CutPrefix(arg, "session:"); ok {
		srv := c.String("server")
		if sock, ok := strings.CutPrefix(srv, "unix:"); ok {
			client.Transport = &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", sock)
			}}
			srv = "http://tracecell"
		} else if !strings.HasPrefix(srv, "http://") && !strings.HasPrefix(srv, "https://") {
			srv = "http://" + srv
		}
		u = strings.TrimSuffix(srv, "/") + "/v1/sessions/" + url.PathEscape(id) + "/report"
	}
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		return nil, "", fmt.Errorf("session report %s: %w", u, err)
	}
	tok := os.Getenv("TRACECELL_TOKEN")
	if f := c.String("token-file"); f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, "", fmt.Errorf("--token-file: %w", err)
		}
		tok = strings.TrimSpace(string(b))
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, "", fmt.Errorf("session report %s: %w (is the server running? see --server)", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return nil, "", fmt.Errorf("session report %s: %s: %s", u, resp.Status, strings.TrimSpace(string(b)))
	}
	return resp.Body, u, nil
}

// writeOut writes through f to the file path (atomically: a temporary
// file renamed over it) or to stdout when path is "".
func writeOut(path string, stdout io.Writer, f func(io.Writer) error) error {
	if path == "" {
		if err := f(stdout); err != nil {
			return &exitError{statusFailed, err}
		}
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tracecell-out-*")
	if err != nil {
		return &exitError{statusFailed, fmt.Errorf("--output %s: %w", path, err)}
	}
	if err := f(tmp); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return &exitError{statusFailed, err}
	}
	// The mode through the descriptor, not by name: the directory may be a
	// tree's writable root, and a tree still running could have swapped the
	// temporary name for a symlink (chmod(2) follows it).
	tmp.Chmod(0o644)
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return &exitError{statusFailed, fmt.Errorf("--output %s: %w", path, err)}
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return &exitError{statusFailed, fmt.Errorf("--output %s: %w", path, err)}
	}
	return nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// policyCheck validates a policy file with config's own parser and
// builder and prints the effective policy. Build creates missing writable
// roots and a .tmp directory in the first: to check without changing the
// file system, it is given a throwaway first root, and roots that do not
// exist yet are listed instead of created.
func policyCheck(path string, stdout io.Writer) error {
	s, err := config.LoadFile(path)
	if err != nil {
		return &exitError{statusFailed, err}
	}
	tmp, err := os.MkdirTemp("", "tracecell-check-")
	if err != nil {
		return &exitError{statusFailed, fmt.Errorf("policy check: %w", err)}
	}
	defer os.RemoveAll(tmp)
	cp := *s
	var missing []string
	cp.Write = []string{tmp}
	for _, w := range s.Write {
		a, err := config.Abs(w)
		if err != nil {
			return &exitError{statusFailed, fmt.Errorf("policy file %s: write %s: %v", path, w, err)}
		}
		if _, err := os.Lstat(a); err != nil {
			missing = append(missing, a)
			continue
		}
		cp.Write = append(cp.Write, w)
	}
	cp.Cwd = ""
	if s.Cwd != "" {
		if st, err := os.Stat(s.Cwd); err != nil || !st.IsDir() {
			return &exitError{statusFailed, fmt.Errorf("policy file %s: cwd %s: not an existing directory", path, s.Cwd)}
		}
	}
	plan, err := config.Build(&cp, []string{"/bin/true"}, os.Environ())
	if err != nil {
		return &exitError{statusFailed, fmt.Errorf("policy file %s: %v", path, err)}
	}
	pc := plan.Policy
	pc.WriteRoots = append(pc.WriteRoots[1:], missing...)
	// Everything that grants the tree something is shown: the programs and
	// the exec patterns (a directory given is its "dir/*"), the variables
	// set and passed through, the capabilities kept (by a privileged
	// tracecell).
	keepEnv := append(append([]string{}, config.KeptEnv...), "LC_*")
	keepEnv = append(keepEnv, s.KeepEnv...)
	eff := map[string]any{
		"mode": pc.Mode.String(), "net": pc.Net.String(), "write": orEmpty(pc.WriteRoots),
		"allow_exec":   append(orEmpty(pc.AllowExec), pc.AllowExecPatterns...),
		"allow_device": orEmpty(pc.Devices), "scratch": orEmpty(pc.Scratch),
		"keep_env": keepEnv, "keep_cap": plan.KeepCaps.Names(),
	}
	if len(s.Env) > 0 {
		eff["env"] = s.Env
	}
	if len(s.Write) == 0 {
		eff["write"] = "a fresh directory under $TMPDIR per run"
	}
	if pc.ReadRoots != nil {
		eff["read"] = orEmpty(pc.ReadRoots)
	} else {
		eff["read"] = "anywhere"
	}
	if len(pc.DenyRead) > 0 {
		eff["deny_read"] = pc.DenyRead
	}
	if plan.Timeout > 0 {
		eff["timeout"] = plan.Timeout.String()
	}
	if plan.MaxProcs > 0 {
		eff["max_procs"] = plan.MaxProcs
	}
	for _, r := range plan.Rlimits {
		eff[r.Name] = r.Cur
	}
	if s.NoFreeze {
		eff["no_freeze"] = true
	}
	b, err := yaml.Marshal(eff)
	if err != nil {
		return &exitError{statusFailed, err}
	}
	fmt.Fprintf(stdout, "# %s is valid. The effective policy (paths resolved, defaults filled in):\n", path)
	for _, m := range missing {
		fmt.Fprintf(stdout, "# write %s does not exist yet: tracecell run creates it\n", m)
	}
	for _, w := range plan.Warnings {
		fmt.Fprintf(stdout, "# warning: %s\n", oneLine(w))
	}
	_, err = stdout.Write(b)
	return err
}

func orEmpty(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}
