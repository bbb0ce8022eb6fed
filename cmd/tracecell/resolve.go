package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tracecell/tracecell/config"
)

// policyResolve prints the policy file at path as JSON that `--policy`
// reads back to the same settings, with every path made absolute as
// `tracecell run --policy` would make it here: "~" and "~user" expanded
// with this process's HOME and password database, relative paths against
// this directory. A program that starts tracecell elsewhere, with another
// HOME (the Agents SDK sets HOME to the workspace), passes the resolved
// file instead, so that "deny_read: [~/.ssh]" still means the operator's.
//
// Names in allow_exec (no slash) stay names, looked up at each run; a
// relative allow_exec path stays relative to the run's directory, as
// documented for the flag.
func policyResolve(path string, stdout io.Writer) error {
	s, err := config.LoadFile(path)
	if err != nil {
		return &exitError{statusFailed, err}
	}
	abs := func(key, v string) (string, error) {
		if v == "" {
			return "", nil
		}
		a, err := config.Abs(v)
		if err != nil {
			return "", &exitError{statusFailed, fmt.Errorf("policy file %s: %s %s: %v", path, key, v, err)}
		}
		return a, nil
	}
	absList := func(key string, l []string, only func(string) bool) ([]string, error) {
		if l == nil {
			return nil, nil
		}
		out := make([]string, 0, len(l))
		for _, v := range l {
			if only != nil && !only(v) {
				out = append(out, v)
				continue
			}
			a, err := abs(key, v)
			if err != nil {
				return nil, err
			}
			out = append(out, a)
		}
		return out, nil
	}
	tilde := func(v string) bool { return strings.HasPrefix(v, "~") }
	out := map[string]any{}
	// A list the file gives is printed even when empty: "allow_exec: []"
	// allows no program, "read: []" restricts reads to the runtime and the
	// writable roots, "scratch: []" has none; left out, each is its default.
	for _, l := range []struct {
		key  string
		v    []string
		only func(string) bool
	}{
		{"write", s.Write, nil}, {"read", s.Read, nil}, {"deny_read", s.DenyRead, nil},
		{"allow_exec", s.AllowExec, tilde}, {"scratch", s.Scratch, nil},
	} {
		a, err := absList(l.key, l.v, l.only)
		if err != nil {
			return err
		}
		if a != nil {
			out[l.key] = a
		}
	}
	for _, f := range []struct {
		key string
		v   string
	}{{"cwd", s.Cwd}, {"report", s.Report}, {"trace", s.Trace}} {
		a, err := abs(f.key, f.v)
		if err != nil {
			return err
		}
		if a != "" {
			out[f.key] = a
		}
	}
	set := func(key string, v any, ok bool) {
		if ok {
			out[key] = v
		}
	}
	set("net", s.Net, s.Net != "")
	set("mode", s.Mode, s.Mode != "")
	// Durations in seconds (a JSON number, which --policy reads too), so
	// that a program reading this needs no Go duration parser.
	set("timeout", time.Duration(s.Timeout).Seconds(), s.Timeout != 0)
	set("cpu_time", time.Duration(s.CPUTime).Seconds(), s.CPUTime != 0)
	set("memory", s.Memory, s.Memory != 0)
	set("max_file_size", s.MaxFileSize, s.MaxFileSize != 0)
	set("max_procs", s.MaxProcs, s.MaxProcs != 0)
	set("max_open_files", s.MaxOpenFiles, s.MaxOpenFiles != 0)
	set("env", s.Env, len(s.Env) > 0)
	set("keep_env", s.KeepEnv, s.KeepEnv != nil)
	set("allow_device", s.AllowDevice, s.AllowDevice != nil)
	set("keep_cap", s.KeepCap, s.KeepCap != nil)
	set("log_level", s.LogLevel, s.LogLevel != "")
	set("log_format", s.LogFormat, s.LogFormat != "")
	set("quiet", s.Quiet, s.Quiet)
	set("no_freeze", s.NoFreeze, s.NoFreeze)
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
