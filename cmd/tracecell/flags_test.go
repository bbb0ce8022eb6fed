package main

import (
	"io"
	"reflect"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestFlagNames checks that every flag of every command answers Names
// exactly as the wrapped cli flag does, and that the wrapper
// is invisible to cli: it type-asserts *cli.BoolFlag for Hidden (shell
// completion) and DisableDefaultText (help), so neither may be set on a
// wrapped bool flag.
func TestFlagNames(t *testing.T) {
	app := newApp(nil, io.Discard, io.Discard)
	for _, cmd := range app.Commands {
		for _, f := range cmd.Flags {
			var inner cli.Flag
			switch w := f.(type) {
			case stringFlag:
				inner = w.StringFlag
			case stringSliceFlag:
				inner = w.StringSliceFlag
			case intFlag:
				inner = w.IntFlag
			case boolFlag:
				inner = w.BoolFlag
				if w.Hidden || w.DisableDefaultText {
					t.Errorf("%s --%s: a wrapped bool flag may not be Hidden or DisableDefaultText", cmd.Name, w.Name)
				}
			default:
				t.Errorf("%s: flag %T is not wrapped (its Names runs a regexp)", cmd.Name, f)
				continue
			}
			if got, want := f.Names(), inner.Names(); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: names %q, cli's %q", cmd.Name, got, want)
			}
			// Names hands out a fresh slice, as cli.FlagNames does.
			n := f.Names()
			n[0] = "changed"
			if f.Names()[0] == "changed" {
				t.Errorf("%s: Names returns a shared slice", cmd.Name)
			}
		}
	}
}

// TestSetFlags checks setFlags against cli's IsSet for every flag name of
// every command, over argument lists that set flags by name, by alias,
// more than once, with = and with the default value.
func TestSetFlags(t *testing.T) {
	for _, args := range [][]string{
		{"run"},
		{"run", "-q", "--write", "/a", "--write", "/b", "--max-procs", "0"},
		{"run", "--quiet=false", "--no-freeze", "--memory=1G", "--env", "A=B", "--net", "", "--policy", "p.yaml"},
		{"run", "--mode", "audit", "--timeout", "5", "--cpu-time", "1", "--max-file-size", "1M", "--max-open-files", "9",
			"--cwd", "/", "--read", "/", "--deny-read", "/x", "--allow-exec", "/bin/sh", "--keep-env", "HOME",
			"--allow-device", "/dev/null", "--scratch", "/tmp", "--report", "r", "--trace", "t", "--log-level", "info", "--log-format", "json"},
		{"serve"},
		{"serve", "--pool-size", "2", "--write", "/w", "--preload", "numpy", "--exec-timeout", "60s", "--memory", "1G"},
		{"mcp", "--listen", "127.0.0.1:1", "--max-result-chars", "5000", "--no-freeze", "--env", "A=B"},
	} {
		app := newApp(nil, io.Discard, io.Discard)
		ran := false
		for _, cmd := range app.Commands {
			cmd.Action = func(c *cli.Context) error {
				ran = true
				got := setFlags(c)
				names := []string{"cwd", "report", "trace", "quiet", "timeout", "nosuchflag"} // undefined in serve and mcp
				for _, f := range c.Command.Flags {
					names = append(names, f.Names()...)
				}
				for _, n := range names {
					if got[n] != c.IsSet(n) {
						t.Errorf("%q: setFlags[%q] = %v, IsSet %v", args, n, got[n], c.IsSet(n))
					}
				}
				return nil
			}
		}
		if err := app.Run(append([]string{"tracecell"}, args...)); err != nil || !ran {
			t.Fatalf("%q: %v (action ran: %v)", args, err, ran)
		}
	}
}
