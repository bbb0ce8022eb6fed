package mcpserver

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/report"
	"github.com/tracecell/tracecell/syscalls"
	"github.com/tracecell/tracecell/worker"
)

// StripFences returns code without a Markdown fence around it: "```python
// ... ```", "```py", "``` ... ```" or "~~~" fences, with blank lines around
// them. Code without a fence, or with prose around the fence, is returned
// as given (prose is not Python, and the error says so better than a guess).
func StripFences(code string) string {
	t := strings.TrimSpace(strings.ReplaceAll(code, "\r\n", "\n"))
	for _, fence := range []string{"```", "~~~"} {
		if !strings.HasPrefix(t, fence) {
			continue
		}
		first, rest, ok := strings.Cut(t, "\n")
		if !ok { // one line: ```print(1)```
			inner := strings.TrimSuffix(strings.TrimPrefix(t, fence), fence)
			return strings.TrimSpace(inner)
		}
		info := strings.TrimSpace(strings.TrimPrefix(first, fence))
		if strings.ContainsAny(info, " \t`") && !isLang(info) {
			return code // "```python and then prose": not a plain fence
		}
		rest = strings.TrimRight(rest, " \t\n")
		if strings.HasSuffix(rest, "\n"+fence) {
			rest = strings.TrimSuffix(rest, "\n"+fence)
		} else if rest == fence {
			rest = ""
		}
		return rest
	}
	return code
}

// NormalizeCode is the code to run from the tool's argument: fences
// stripped (StripFences), and a JSON object {"code": "..."} unwrapped. The
// latter is what a model sends when its client lists the tool as a function
// (vLLM with an mcp client that drops the include_in_prompt annotation)
// and then passes the message on as the code; as Python it would only
// evaluate a dict.
func NormalizeCode(code string) string {
	c := StripFences(code)
	t := strings.TrimSpace(c)
	if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") {
		var m map[string]json.RawMessage
		var inner string
		if json.Unmarshal([]byte(t), &m) == nil && len(m) == 1 && json.Unmarshal(m["code"], &inner) == nil {
			return StripFences(inner)
		}
	}
	return c
}

// The regular expressions are compiled on first use, not at start-up: every
// tracecell process (run, the worker-hosts) links this package.
var langRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?i:python3?|py|ipython3?)?$`) })

func isLang(info string) bool { return langRe().MatchString(info) }

// ansiRe matches ANSI escape sequences: CSI (colours, cursor moves), OSC
// (titles, hyperlinks) and two-byte escapes.
var ansiRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile("\x1b\\[[0-?]*[ -/]*[@-~]|\x1b\\][^\x07\x1b]*(?:\x07|\x1b\\\\)?|\x1b[@-Z\\\\-_]?")
})

// StripANSI removes ANSI escape sequences.
func StripANSI(s string) string {
	if !strings.Contains(s, "\x1b") {
		return s
	}
	return ansiRe().ReplaceAllString(s, "")
}

// clip keeps the head and the tail of s within max characters (runes),
// marking the cut; cut is the number of characters removed.
func clip(s string, max int) (out string, cut int) {
	r := []rune(s)
	if max <= 0 || len(r) <= max {
		return s, 0
	}
	head := max * 2 / 3
	tail := max - head
	cut = len(r) - head - tail
	return string(r[:head]) + fmt.Sprintf("\n[... %d characters cut ...]\n", cut) + string(r[len(r)-tail:]), cut
}

// Context is what a result is formatted against.
type Context struct {
	// Sandbox is the session's sandbox (the code's working directory).
	Sandbox string
	// ExtraWrite are other writable directories (the operator's --write).
	ExtraWrite []string
	// Net is the network mode: "deny", "loopback" or "allow".
	Net string
	// MaxChars caps the text (0: DefaultMaxChars).
	MaxChars int
}

// DefaultMaxChars caps the text of one result: about 6000 tokens, enough
// for a long traceback and a table, small enough for a model's context.
const DefaultMaxChars = 24000

// maxTraceLines is how many lines of a traceback are kept (the last ones,
// nearest to the error).
const maxTraceLines = 30

// maxBlocked caps the lines of the "Blocked operations" section.
const maxBlocked = 20

// FormatResult turns an execution result into the text a model reads:
// stdout, stderr, the last value, the error, blocked operations with what
// to do instead, files written, and notes (truncation, timeout, a lost
// session). ANSI codes are stripped and the text is capped.
func FormatResult(res *worker.Result, c Context) string {
	max := c.MaxChars
	if max <= 0 {
		max = DefaultMaxChars
	}
	var b strings.Builder
	var notes []string
	section := func(title, body string, budget int) {
		body = strings.TrimRight(StripANSI(body), "\n")
		if body == "" {
			return
		}
		body, cut := clip(body, budget)
		if cut > 0 {
			notes = append(notes, fmt.Sprintf("%s was cut: %d characters in the middle were left out; print less, or write it to a file and read parts of it", title, cut))
		}
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString("[" + title + "]\n" + body + "\n")
	}
	section("stdout", res.Stdout, max/2)
	section("stderr", res.Stderr, max/4)
	if res.Result != nil {
		section("result", *res.Result, max/4)
	}
	if e := res.Error; e != nil {
		text := e.Name
		if e.Message != "" {
			text += ": " + e.Message
		}
		if tb := trimTraceback(e.Traceback); tb != "" && strings.TrimSpace(tb) != strings.TrimSpace(text) {
			text = tb
		}
		section("error", text, max/4)
	}
	if lines := blockedLines(res.Denials, c); len(lines) > 0 {
		title := "blocked operations"
		if res.Error == nil && !res.TimedOut && !res.SessionLost {
			// Libraries try things and carry on (matplotlib runs fc-list,
			// platform runs uname): say so, or a model takes a finished
			// plot for a failure.
			title += " (refused, but the code carried on and finished)"
		}
		section(title, strings.Join(lines, "\n"), max/4)
	}
	if len(res.Artifacts) > 0 {
		var fl []string
		for _, a := range res.Artifacts {
			kind := a.MIME
			if kind == "" {
				kind = "file"
			}
			fl = append(fl, report.Visible(fmt.Sprintf("%s (%s, %s, %s)", a.Path, a.Change, kind, sizeText(a.Size))))
		}
		section("files written in the sandbox", strings.Join(fl, "\n"), max/8)
	}
	if res.TimedOut {
		notes = append(notes, "the code was interrupted: it ran past the time limit of one call; make it faster or split the work across calls")
	}
	if res.SessionLost {
		why := res.LostReason
		if why == "" {
			why = "the Python process ended"
		}
		notes = append(notes, "the session was lost: "+why+"; variables and imports are gone, files in the sandbox are kept")
	}
	if res.Truncated && !strings.Contains(strings.Join(res.Notes, " "), "truncat") {
		notes = append(notes, "the output exceeded the server's cap and was truncated")
	}
	notes = append(notes, res.Notes...)
	if len(notes) > 0 {
		var nb strings.Builder
		for _, n := range notes {
			nb.WriteString("- " + report.Visible(StripANSI(n)) + "\n")
		}
		section("notes", nb.String(), max/8)
	}
	out := b.String()
	if out == "" {
		out = "(no output: the code ran without printing anything, and its last line is not an expression with a value)\n"
	}
	if o, cut := clip(out, max); cut > 0 {
		out = o + fmt.Sprintf("\n[the result was cut to %d characters]\n", max)
	}
	return out
}

func sizeText(n int64) string {
	for _, u := range []struct {
		div  int64
		name string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if n >= u.div {
			v := strconv.FormatFloat(float64(n)/float64(u.div), 'f', 1, 64)
			return strings.TrimSuffix(v, ".0") + " " + u.name
		}
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// trimTraceback keeps the last maxTraceLines lines of a traceback.
func trimTraceback(tb string) string {
	tb = strings.TrimRight(tb, "\n")
	lines := strings.Split(tb, "\n")
	if len(lines) <= maxTraceLines {
		return tb
	}
	keep := lines[len(lines)-maxTraceLines:]
	return fmt.Sprintf("Traceback (most recent call last, %d earlier lines left out):\n", len(lines)-maxTraceLines) + strings.Join(keep, "\n")
}

// blockedLines turns denials into one actionable line each, duplicates
// counted, at most maxBlocked lines. The tries of one PATH search are one
// denial (report.ExecWalks; the worker groups them already, this keeps
// results of other sources right): "blocked 2 times" is two attempts.
func blockedLines(evs []report.Event, c Context) []string {
	evs = report.GroupExecWalks(evs)
	var lines []string
	count := map[string]int{}
	for i := range evs {
		// Paths, program names and reasons are the code's to choose: a
		// newline in one opened sections of its own making in the text a
		// model reads (red team, round 49). Visible escapes it.
		l := report.Visible(blockedLine(&evs[i], c))
		if count[l] == 0 {
			lines = append(lines, l)
		}
		count[l]++
	}
	for i, l := range lines {
		if n := count[l]; n > 1 {
			lines[i] = fmt.Sprintf("%s (blocked %d times)", l, n)
		}
	}
	if len(lines) > maxBlocked {
		more := len(lines) - maxBlocked
		lines = append(lines[:maxBlocked], fmt.Sprintf("- ... and %d more blocked operations", more))
	}
	return lines
}

// writableText says where the code may write.
func writableText(c Context) string {
	s := "files you can change live in " + c.Sandbox + " (the current directory)"
	if len(c.ExtraWrite) > 0 {
		s += " and " + strings.Join(c.ExtraWrite, ", ")
	}
	return s
}

// blockedLine is one denial in words a model can act on.
func blockedLine(e *report.Event, c Context) string {
	prefix := "- "
	suffix := ""
	if e.Decision == report.Audit {
		suffix = " (audit mode: it was allowed this time, but the policy would block it)"
	}
	paths := func() string {
		var ps []string
		for _, p := range e.Paths {
			s := p.Resolved
			if s == "" || p.Special != "" {
				s = p.Given
			}
			if p.Given != "" && p.Given != s && p.Special == "" {
				s = p.Given + " (" + s + ")"
			}
			ps = append(ps, s)
		}
		if len(ps) == 0 {
			return "?"
		}
		return strings.Join(ps, " -> ")
	}
	verb := map[syscalls.Kind]string{
		syscalls.KindWrite: "write to", syscalls.KindCreate: "create", syscalls.KindDelete: "delete",
		syscalls.KindRename: "rename", syscalls.KindLink: "link", syscalls.KindChmod: "chmod of",
		syscalls.KindChown: "chown of", syscalls.KindXattr: "set attributes of", syscalls.KindRead: "read of",
	}
	switch {
	case e.Kind == syscalls.KindLease:
		return prefix + "lease on " + paths() + " blocked: a lease (fcntl F_SETLEASE) holds back other programs that open the file for writing, so it is allowed only on files in the sandbox; read the file without one, or copy it into the sandbox first" + suffix
	case e.Kind.ModifiesFS():
		what := verb[e.Kind] + " " + paths() + " blocked"
		switch e.Rule {
		case policy.RuleOutsideRoots:
			return prefix + what + ": outside the sandbox; " + writableText(c) + "; to change a host file, ask for it to be copied into the sandbox first, then change the copy" + suffix
		case policy.RuleRootItself:
			return prefix + what + ": the sandbox directory itself cannot be removed, renamed or changed; work with the files inside it" + suffix
		case policy.RuleProcWrite:
			return prefix + what + ": writing under /proc is not allowed" + suffix
		case policy.RuleDenyRead:
			// A link, rename or snapshot that would make a denied file
			// readable elsewhere: said as a read is, without the
			// operator's entry (round 62 of the red team: the reason
			// named the denied directory).
			return prefix + what + ": the operator does not allow reading it, so it may not be linked, moved or copied either; do not retry, work without it" + suffix
		}
		return prefix + what + ": " + e.Reason + suffix
	case e.Kind == syscalls.KindRead:
		return prefix + "read of " + paths() + " blocked: the operator does not allow reading it; do not retry, work without it" + suffix
	case e.Kind == syscalls.KindExec:
		prog := e.Exe
		if len(e.Paths) > 0 {
			// The program found, not each name tried along PATH; the name
			// given too when it is another program (/bin/sh -> dash).
			p := e.Paths[0]
			prog = p.Resolved
			if prog == "" {
				prog = p.Given
			} else if p.Given != "" && filepath.Base(p.Given) != filepath.Base(p.Resolved) {
				prog = p.Given + " (" + p.Resolved + ")"
			}
		}
		if prog == "" && len(e.Argv) > 0 {
			prog = e.Argv[0]
		}
		if prog == "" {
			prog = e.Program
		}
		return prefix + "running the program " + prog + " blocked: running programs is not allowed here (subprocess, os.system, shell commands); do the work in Python itself, e.g. os.listdir or pathlib instead of ls, shutil instead of cp" + suffix
	case e.Kind == syscalls.KindConnect || e.Kind == syscalls.KindBind:
		addr := e.Address
		if e.Port != 0 || e.Family == "inet" || e.Family == "inet6" {
			addr += " port " + strconv.Itoa(e.Port)
		}
		if addr == "" || addr == " port 0" {
			addr = paths()
		}
		act := "network connection to " + addr
		if e.Kind == syscalls.KindBind {
			act = "listening on " + addr
		}
		switch e.Rule {
		case policy.RuleNetDeny, policy.RuleNetFamily:
			return prefix + act + " blocked: the network is off (no internet, no downloads, no pip install); use the files on this machine" + suffix
		case policy.RuleNetLoopback:
			return prefix + act + " blocked: only this machine (127.0.0.1) is reachable; the internet is not" + suffix
		}
		return prefix + act + " blocked: " + e.Reason + suffix
	case e.Kind == syscalls.KindSignal || e.Kind == syscalls.KindProcess:
		target := "a process"
		if e.TargetPid != nil {
			target = "process " + strconv.Itoa(*e.TargetPid)
		}
		what := e.Syscall
		if e.Signal != "" {
			what = "signal " + e.Signal
		}
		return prefix + what + " to " + target + " blocked: only processes started by this code may be signalled or changed" + suffix
	case e.Kind == syscalls.KindForbidden:
		return prefix + "system call " + e.Syscall + " blocked: it is never allowed in the sandbox" + suffix
	}
	// A kind without advice of its own: the event's summary (the line
	// the notice and the Python client show too) with the reason and the
	// paths resolved.
	return prefix + e.Detailed() + suffix
}
