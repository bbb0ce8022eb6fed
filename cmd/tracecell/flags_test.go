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
