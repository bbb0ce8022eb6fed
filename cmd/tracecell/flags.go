package main

import "github.com/urfave/cli/v2"

// urfave/cli's Flag.Names runs a regexp on every call (cli.FlagNames strips
// a v1-style "name, alias" suffix), and Context.IsSet of a flag that is not
// set calls Names of every flag of the command up to that one. Every run
// asks IsSet of each flag in cli's runFlagActions: some 300 regexp calls,
// several % of the CPU of `tracecell run -- /bin/true`. The flag types
// below answer Names without the regexp; everything else is the embedded
// cli flag's. Each is one pointer, so wrapping allocates nothing.
//
// Names is Name followed by Aliases, which is what cli.FlagNames returns
// for names without ',' or ' ' (TestFlagNames checks every flag of every
// command).

type stringFlag struct{ *cli.StringFlag }

type stringSliceFlag struct{ *cli.StringSliceFlag }

type intFlag struct{ *cli.IntFlag }

type boolFlag struct{ *cli.BoolFlag }

func (f stringFlag) Names() []string      { return flagNames(f.Name, f.Aliases) }
func (f stringSliceFlag) Names() []string { return flagNames(f.Name, f.Aliases) }
func (f intFlag) Names() []string         { return flagNames(f.Name, f.Aliases) }
func (f boolFlag) Names() []string        { return flagNames(f.Name, f.Aliases) }

// flagNames returns a new slice each time, as cli.FlagNames does.
func flagNames(name string, aliases []string) []string {
	return append([]string{name}, aliases...)
}

// fastNames wraps the cli flags of fl in place (flags already wrapped, and
// types without a wrapper, stay as they are) and returns fl.
func fastNames(fl []cli.Flag) []cli.Flag {
	for i, f := range fl {
		switch f := f.(type) {
		case *cli.StringFlag:
			fl[i] = stringFlag{f}
		case *cli.StringSliceFlag:
			fl[i] = stringSliceFlag{f}
		case *cli.IntFlag:
			fl[i] = intFlag{f}
		case *cli.BoolFlag:
			fl[i] = boolFlag{f}
		}
	}
	return fl
}

// setFlags returns every name (aliases included) of the flags of c's
// command for which c.IsSet is true, found in one pass: settingsFrom asks
// about some 25 flags, and each IsSet of an unset flag walks the command's
// flags again. A flag is set when it was given under any of its names
// (LocalFlagNames lists the names given, e.g. "q" for --quiet) or from its
// environment variables or file (LocalFlagNames lists all its names then).
// TestSetFlags checks the result against IsSet.
func setFlags(c *cli.Context) map[string]bool {
	set := map[string]bool{}
	for _, n := range c.LocalFlagNames() {
		set[n] = true
	}
	if c.Command == nil {
		return set
	}
	for _, f := range c.Command.Flags {
		names := f.Names()
		for _, n := range names {
			if set[n] {
				for _, m := range names {
					set[m] = true
				}
				break
			}
		}
	}
	return set
}
