package mcpserver

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/tracecell/tracecell/server"
)

// Instructions describe the python tool the way GPT-OSS models were trained
// to expect it (a stateful notebook-like session, a time limit, a directory
// where files persist, whether the internet is reachable), in our words,
// with the server's real limits. vLLM puts this text into the model's
// system prompt as the description of its "python" tool.
//
// The sandbox path is per session and the instructions are read once, when
// a client connects (vLLM: at start-up, before any session exists), so they
// name the state directory pattern; the first result of each session names
// its real sandbox, as does every blocked write.
func Instructions(l server.Limits) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("Use this tool to run Python 3 code. The code runs in a stateful session, like a Jupyter notebook: " +
		"variables, imports, functions and loaded data stay available from one call to the next within the conversation. " +
		"Send plain Python code. The result shows stdout, stderr, the value of the last expression, the error with its traceback, " +
		"any operation that was blocked, and the files the code wrote.\n")
	w("Each call may run for at most %s; code still running then is interrupted, and the session keeps its state.\n", durationText(l.ExecTimeout))
	w("The working directory is the session's own sandbox, a fresh directory %s (the first result names it). "+
		"Files written there persist for the rest of the session: save data, results and plots there, with relative paths. "+
		"Open matplotlib figures are saved as PNG files under outputs/ after each call.\n", filepath.Join(l.StateDir, "sbx-*"))
	w("You can read files anywhere on this machine, but create, change or delete files only inside the sandbox")
	if len(l.ExtraWrite) > 0 {
		w(" (and in %s)", strings.Join(l.ExtraWrite, ", "))
	}
	w("; to change a file elsewhere, ask the user to have it copied into the sandbox, then change the copy.\n")
	if len(l.AllowExec) == 0 {
		w("Starting other programs (subprocess, os.system, shell commands) is not allowed: do everything in Python.\n")
	} else {
		w("Starting other programs is not allowed, except: %s.\n", strings.Join(l.AllowExec, ", "))
	}
	switch l.Net {
	case "allow":
		w("The network is reachable.\n")
	case "loopback":
		w("The internet is not reachable: only this machine (127.0.0.1) is; no downloads and no pip install, use the packages already installed.\n")
	default:
		w("The internet is not reachable: no downloads and no pip install; use the packages already installed.\n")
	}
	if l.Memory > 0 {
		w("Memory is limited to %s per process.\n", sizeText(int64(l.Memory)))
	}
	if l.IdleTimeout > 0 {
		w("A session unused for %s is closed, with its files.\n", durationText(l.IdleTimeout))
	}
	if l.Audit {
		w("(The operator runs the sandbox in audit mode: blocked operations are reported but allowed.)\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// durationText is "60 seconds", "2 minutes", "1h30m0s".
func durationText(d time.Duration) string {
	switch {
	case d < 2*time.Minute && d%time.Second == 0:
		return plural(int64(d/time.Second), "second")
	case d%time.Hour == 0 && d >= time.Hour:
		return plural(int64(d/time.Hour), "hour")
	case d%time.Minute == 0 && d >= time.Minute:
		return plural(int64(d/time.Minute), "minute")
	case d%time.Second == 0:
		return plural(int64(d/time.Second), "second")
	}
	return d.String()
}

func plural(n int64, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}
