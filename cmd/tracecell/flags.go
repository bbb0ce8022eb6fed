package main

import "github.com/urfave/cli/v2"

// urfave/cli's Flag.Names runs a regexp on every call (cli.FlagNames strips
// a v1-style "name, alias" suffix), and Context.IsSet of a flag that is not
// set calls Names of every flag of the command up to that one. Every run
// asks IsSet of each flag twice, once in cli's runFlagActions and once in
// settingsFrom: about 600 regexp calls, 5% of the CPU of `tracecell run --
// /bin/true`. The flag types below answer Names from a list made once,
// without the regexp; everything else is the embedded cli flag's.
//
// The cached list is Name followed by Aliases, which is what cli.FlagNames
// returns for names without ',' or ' ' (TestFlagNamesCached checks every
// flag of every command).

type stringFlag struct {
	*cli.StringFlag
	names []string
}

type stringSliceFlag struct {
	*cli.StringSliceFlag
	names []string
}

type intFlag struct {
	*cli.IntFlag
	names []string
}

type boolFlag struct {
	*cli.BoolFlag
	names []string
}

// Names returns a new slice each time, as cli.FlagNames does.
func (f *stringFlag) Names() []string      { return append([]string(nil), f.names...) }
func (f *stringSliceFlag) Names() []string { return append([]string(nil), f.names...) }
func (f *intFlag) Names() []string         { return append([]string(nil), f.names...) }
func (f *boolFlag) Names() []string        { return append([]string(nil), f.names...) }

func flagNames(name string, aliases []string) []string {
	return append([]string{name}, aliases...)
}

// cachedNames wraps the cli flags of fl in place (flags already wrapped, and
// types without a wrapper, stay as they are) and returns fl.
func cachedNames(fl []cli.Flag) []cli.Flag {
	for i, f := range fl {
		switch f := f.(type) {
		case *cli.StringFlag:
			fl[i] = &stringFlag{f, flagNames(f.Name, f.Aliases)}
		case *cli.StringSliceFlag:
			fl[i] = &stringSliceFlag{f, flagNames(f.Name, f.Aliases)}
		case *cli.IntFlag:
			fl[i] = &intFlag{f, flagNames(f.Name, f.Aliases)}
		case *cli.BoolFlag:
			fl[i] = &boolFlag{f, flagNames(f.Name, f.Aliases)}
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
