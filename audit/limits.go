package audit

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Limits are the resource limits a recorded run or session ran under, in
// the policy file's terms. A suggested policy carries them: learned from a
// run with `--memory 2G`, a policy without `memory` would let the next run
// take all the host's memory.
type Limits struct {
	Timeout      time.Duration // timeout (a session's: the server's time limit of one execution)
	CPUTime      time.Duration // cpu_time
	Memory       uint64        // memory (bytes of address space per process)
	MaxFileSize  uint64        // max_file_size
	MaxProcs     int           // max_procs
	MaxOpenFiles int           // max_open_files
}

func (l Limits) zero() bool { return l == Limits{} }

// parseLimits reads a source's recorded limits: a run report's
// ({"timeout_seconds", "max_procs", "rlimits": [{"name", "cur", "max"}]},
// written by the CLI) or a session report's (the server's Limits, field
// names as in Go). ok is false when v is neither; unknown names an
// rlimit or field this version cannot carry, so the suggestion can say so.
func parseLimits(v any) (l Limits, unknown []string, ok bool) {
	m, isMap := v.(map[string]any)
	if !isMap {
		return l, nil, false
	}
	num := func(key string) (float64, bool) {
		f, isNum := m[key].(float64)
		return f, isNum && f >= 0 && !math.IsInf(f, 0)
	}
	if _, run := m["rlimits"]; run || m["timeout_seconds"] != nil || m["max_procs"] != nil {
		if f, ok := num("timeout_seconds"); ok {
			l.Timeout = time.Duration(f * float64(time.Second))
		}
		if f, ok := num("max_procs"); ok {
			l.MaxProcs = int(f)
		}
		rl, _ := m["rlimits"].([]any)
		for _, x := range rl {
			r, _ := x.(map[string]any)
			name, _ := r["name"].(string)
			cur, isNum := r["cur"].(float64)
			if !isNum || cur < 0 || cur >= math.MaxInt64 {
				unknown = append(unknown, fmt.Sprintf("rlimit %q without a soft limit in range", name))
				continue
			}
			switch name {
			case "cpu_seconds":
				l.CPUTime = time.Duration(cur) * time.Second
			case "address_space_bytes":
				l.Memory = uint64(cur)
			case "file_size_bytes":
				l.MaxFileSize = uint64(cur)
			case "open_files":
				l.MaxOpenFiles = int(cur)
			default:
				unknown = append(unknown, fmt.Sprintf("rlimit %q", name))
			}
		}
		return l, unknown, true
	}
	if _, session := m["ExecTimeout"]; !session {
		return l, nil, false
	}
	// A server before these were recorded wrote only ExecTimeout and
	// Memory: the others are not known, which is not "none".
	var missing []string
	for _, k := range []struct{ field, key string }{{"CPUTime", "cpu_time"}, {"MaxFileSize", "max_file_size"},
		{"MaxProcs", "max_procs"}, {"MaxOpenFiles", "max_open_files"}} {
		if _, has := m[k.field]; !has {
			missing = append(missing, k.key)
		}
	}
	if len(missing) > 0 {
		unknown = append(unknown, strings.Join(missing, ", ")+" (not recorded by the older server that wrote the report)")
	}
	if f, ok := num("ExecTimeout"); ok {
		l.Timeout = time.Duration(f)
	}
	if f, ok := num("CPUTime"); ok {
		l.CPUTime = time.Duration(f)
	}
	if f, ok := num("Memory"); ok {
		l.Memory = uint64(f)
	}
	if f, ok := num("MaxFileSize"); ok {
		l.MaxFileSize = uint64(f)
	}
	if f, ok := num("MaxProcs"); ok {
		l.MaxProcs = int(f)
	}
	if f, ok := num("MaxOpenFiles"); ok {
		l.MaxOpenFiles = int(f)
	}
	return l, unknown, true
}

// suggestLimits sets sg.Limits from the sources: those of the source the
// recorded policy came from (base), else of the first that records any,
// with a note when the sources differ or a limit cannot be carried.
func (sg *Suggestion) suggestLimits(s *Summary, base int) {
	from := -1
	var got []Limits
	var names []string
	notCarried := map[string][]string{} // what is not carried → the sources
	var order []string
	defer func() {
		for _, u := range order {
			sg.LimitNotes = append(sg.LimitNotes, fmt.Sprintf("%s: %s: not carried, set by hand", strings.Join(notCarried[u], ", "), u))
		}
	}()
	for i := range s.Sources {
		l, unknown, ok := parseLimits(s.Sources[i].Limits)
		if !ok {
			if s.Sources[i].Kind != "report" || s.Sources[i].Limits != nil {
				continue
			}
			// A run report without limits ran without any.
			l, ok = Limits{}, true
		}
		for _, u := range unknown {
			if notCarried[u] == nil {
				order = append(order, u)
			}
			notCarried[u] = append(notCarried[u], s.Sources[i].Name)
		}
		if from < 0 || i == base {
			from = len(got)
		}
		got = append(got, l)
		names = append(names, s.Sources[i].Name)
	}
	if from < 0 {
		return
	}
	lim := got[from]
	sg.Limits = &lim
	for i, l := range got {
		if l != lim {
			sg.LimitNotes = append(sg.LimitNotes, fmt.Sprintf("the sources ran under different limits: these are %s's; %s ran under %s", names[from], names[i], l.describe()))
			break
		}
	}
}

// describe says l in the policy file's keys, on one line.
func (l Limits) describe() string {
	if l.zero() {
		return "none"
	}
	var parts []string
	for _, kv := range l.yaml() {
		parts = append(parts, kv[0]+": "+kv[1])
	}
	return strings.Join(parts, ", ")
}

// yaml gives l's keys and values as a policy file writes them (durations
// in seconds, sizes in bytes: both read back exactly), in the order of
// config.Settings.
func (l Limits) yaml() [][2]string {
	var out [][2]string
	add := func(set bool, key, v string) {
		if set {
			out = append(out, [2]string{key, v})
		}
	}
	sec := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) }
	add(l.Timeout > 0, "timeout", sec(l.Timeout))
	add(l.CPUTime > 0, "cpu_time", sec(l.CPUTime))
	add(l.Memory > 0, "memory", strconv.FormatUint(l.Memory, 10))
	add(l.MaxFileSize > 0, "max_file_size", strconv.FormatUint(l.MaxFileSize, 10))
	add(l.MaxProcs > 0, "max_procs", strconv.Itoa(l.MaxProcs))
	add(l.MaxOpenFiles > 0, "max_open_files", strconv.Itoa(l.MaxOpenFiles))
	return out
}
