// Package config reads the operator's settings (a YAML or JSON policy file,
// overridden by flags) and turns them into the effective policy and limits,
// a Plan (Build), and a plan into the tracer's configuration
// (Plan.TracerConfig): the one run assembly of `tracecell run` and the
// session worker.
package config

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Settings are everything an operator can set, in a policy file or by
// flags. Field names in files are the flag names with '-' as '_'.
type Settings struct {
	Write        []string          `yaml:"write" json:"write,omitempty"`
	Cwd          string            `yaml:"cwd" json:"cwd,omitempty"`
	Read         []string          `yaml:"read" json:"read,omitempty"`
	DenyRead     []string          `yaml:"deny_read" json:"deny_read,omitempty"`
	AllowExec    []string          `yaml:"allow_exec" json:"allow_exec,omitempty"`
	Net          string            `yaml:"net" json:"net,omitempty"`
	Mode         string            `yaml:"mode" json:"mode,omitempty"`
	Timeout      Duration          `yaml:"timeout" json:"timeout,omitempty"`
	CPUTime      Duration          `yaml:"cpu_time" json:"cpu_time,omitempty"`
	Memory       Size              `yaml:"memory" json:"memory,omitempty"`
	MaxFileSize  Size              `yaml:"max_file_size" json:"max_file_size,omitempty"`
	MaxProcs     int               `yaml:"max_procs" json:"max_procs,omitempty"`
	MaxOpenFiles int               `yaml:"max_open_files" json:"max_open_files,omitempty"`
	Env          map[string]string `yaml:"env" json:"env,omitempty"`
	KeepEnv      []string          `yaml:"keep_env" json:"keep_env,omitempty"`
	AllowDevice  []string          `yaml:"allow_device" json:"allow_device,omitempty"`
	// KeepCap adds capabilities a tree started by a privileged tracecell
	// keeps beyond caps.DefaultKeep ("net_raw", or "all").
	KeepCap []string `yaml:"keep_cap" json:"keep_cap,omitempty"`
	// Scratch is nil for the default (/dev/shm); an empty list for none.
	Scratch   []string `yaml:"scratch" json:"scratch,omitempty"`
	Report    string   `yaml:"report" json:"report,omitempty"`
	Trace     string   `yaml:"trace" json:"trace,omitempty"`
	LogLevel  string   `yaml:"log_level" json:"log_level,omitempty"`
	LogFormat string   `yaml:"log_format" json:"log_format,omitempty"`
	Quiet     bool     `yaml:"quiet" json:"quiet,omitempty"`
	// NoFreeze turns off stopping the rest of the tree while a checked call
	// is in flight (the race hardening): for trusted, thread-heavy work.
	NoFreeze bool `yaml:"no_freeze" json:"no_freeze,omitempty"`
}

// Duration is a time.Duration written as "90s", "5m" or a number of seconds.
type Duration time.Duration

// UnmarshalText parses "1m30s" or plain seconds.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalText writes the Go form ("1m30s").
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// ParseDuration accepts Go durations ("90s", "1h") and bare seconds ("90", "1.5").
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f < 0 {
			return 0, fmt.Errorf("invalid duration %q: negative", s)
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("invalid duration %q: want e.g. 90s, 5m or a number of seconds", s)
	}
	return d, nil
}

// Size is a byte count written as "512M", "2GiB", "1.5G" or plain bytes.
type Size uint64

// UnmarshalText parses a size.
func (s *Size) UnmarshalText(b []byte) error {
	v, err := ParseSize(string(b))
	if err != nil {
		return err
	}
	*s = Size(v)
	return nil
}

// MarshalText writes plain bytes.
func (s Size) MarshalText() ([]byte, error) { return []byte(strconv.FormatUint(uint64(s), 10)), nil }

// The regexps are compiled on first use: compiling them at package init
// cost every tracecell process ~0.1 ms, also those that never parse a size
// or a policy file.
var sizeRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)\s*([kKmMgGtT]?)(i?[bB]?)$`)
})

// ParseSize accepts "1024", "512K", "512M", "2G", "2GiB", "1.5GB" (powers of 1024).
func ParseSize(s string) (uint64, error) {
	m := sizeRe().FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Errorf("invalid size %q: want e.g. 512M, 2G or a number of bytes", s)
	}
	f, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, fmt.Errorf("invalid size %q: %w", s, err)
	}
	mult := map[string]float64{"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[strings.ToLower(m[2])]
	return uint64(f * mult), nil
}

// Abs makes p absolute against the current directory, expanding a leading
// "~" (the user's home, $HOME) or "~user" (that user's home directory, from
// the password database through os/user), as a shell does. A "~user" whose
// user does not exist is an error, never a directory named "~user" under the
// current one (deny_read: ["~root/.bashrc"] must not silently deny
// <cwd>/~root/.bashrc); a file of that name is written "./~user".
func Abs(p string) (string, error) {
	if strings.HasPrefix(p, "~") {
		home, rest, err := tildeHome(p)
		if err != nil {
			return "", err
		}
		p = filepath.Join(home, rest)
	}
	return filepath.Abs(p)
}

// tildeHome is the home directory a "~" or "~user" path starts with, and the
// rest of the path.
func tildeHome(p string) (string, string, error) {
	name, rest, _ := strings.Cut(p[1:], "/")
	var home string
	if name == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", "", fmt.Errorf("expand %s: %w", p, err)
		}
		home = h
	} else {
		u, err := user.Lookup(name)
		if err != nil {
			return "", "", fmt.Errorf("expand %s: no user named %q (%v); give the absolute path, or ./%s for a file of that name in the current directory", p, name, err, p)
		}
		home = u.HomeDir
	}
	if !filepath.IsAbs(home) {
		return "", "", fmt.Errorf("expand %s: the home directory %q is not an absolute path; give the absolute path", p, home)
	}
	return home, rest, nil
}

// CheckTilde reports an error for a path in "~user" form whose user does
// not exist (or a "~" without a home), so a policy file names the key and
// line before anything runs. Other paths are not checked here.
func CheckTilde(p string) error {
	if !strings.HasPrefix(p, "~") {
		return nil
	}
	_, _, err := tildeHome(p)
	return err
}
