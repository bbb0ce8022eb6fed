package policy

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"syscall"
)

// decideRead is only reached when reads are trapped (restricted or traced).
// Deny-read always applies; with ReadRoots set, reads are confined to the
// read, write, runtime and scratch roots, the device files, and /proc
// (process information the runtime itself reads: /proc/self/maps, cpuinfo).
func (p *Policy) decideRead(op *Op, l Ledger) Decision {
	for i := range op.Paths {
		pa := &op.Paths[i]
		if pa.Special != "" {
			if pa.SpecialInTree {
				continue // a pipe or socket of the tree, reached through /proc
			}
			return deny(syscall.EACCES, RuleProcRead, fmt.Sprintf("%s belongs to %s outside the traced tree", pa.Special, procOwner(pa.Resolved)))
		}
		res := pa.Resolved
		if pa.HeldOutside {
			return deny(syscall.EACCES, RuleProcRead, fmt.Sprintf("%s is an unlinked file or memfd held open by a process outside the traced tree", res))
		}
		if pa.ProcOutside {
			if name, secret := procSecret(res); secret {
				return deny(syscall.EACCES, RuleProcRead, fmt.Sprintf("the %s of %s, a process outside the traced tree, is not readable", name, procOwner(res)))
			}
		}
		if pa.Deleted {
			// Decided by its old name's directory, never by the text
			// (an entry by that text is another file).
			if dir := deletedDir(pa); dir != "" {
				if d, ok := p.denyRead(strings.TrimSuffix(res, " (deleted)")); ok {
					return d
				}
				if s, ok := p.scratchDir(dir); ok && p.cfg.PrivateScratch && (dir == s || l == nil || !l.Owned(dir)) {
					return deny(syscall.EACCES, RuleDeletedFile, fmt.Sprintf("%s is an unlinked file of the scratch dir %s, not in a directory the traced tree created: nothing shows it is the tree's", res, s))
				}
				if p.cfg.ReadRoots != nil && !p.readable(dir) {
					return deny(syscall.EACCES, RuleReadNotAllowed, "an unlinked file outside readable roots ("+p.readText+")")
				}
			}
			continue
		}
		if !clean(res) {
			return deny(syscall.EACCES, RuleUnresolvedPath, fmt.Sprintf("path %q is not resolved", res))
		}
		if d, ok := p.denyRead(res); ok {
			return d
		}
		// Carved out as the entry is: a sandbox inside a home directory
		// reached through a symlink (/home -> /data/home) stays the
		// tree's (round 59 of the red team).
		if pa.DenyLink != "" && slices.Contains(p.cfg.DenyReadLinks, pa.DenyLink) && Under(res, pa.DenyLinkAt) &&
			!p.carvedOut(res, denyEntry{path: pa.DenyLinkAt, of: pa.DenyLink}) {
			return deny(syscall.EACCES, RuleDenyRead, "matches deny-read "+pa.DenyLink+", followed through its symlinks as they point now (to "+pa.DenyLinkAt+")")
		}
		if d, ok := p.denyVersions(res); ok {
			return d
		}
		if of, ok := p.denyFiles[[2]uint64{pa.Dev, pa.Ino}]; ok && pa.Exists && pa.Ino != 0 && !pa.IsDir {
			return deny(syscall.EACCES, RuleDenyRead, "is deny-read "+of+" under another name (the same file: a hard link, or another mount of it)")
		}
		if p.cfg.PrivateScratch {
			if s, ok := p.scratchDir(res); ok && res != s && (l == nil || !l.Owned(res)) {
				if l != nil && l.Replaced(res) {
					return deny(syscall.EACCES, RuleScratchNotOwned, fmt.Sprintf("replaced by another process: the traced tree created an entry by this name, but another process removed or moved it and made its own here (the entries of the scratch dir %s are private to the tree that made them)", s))
				}
				return deny(syscall.EACCES, RuleScratchNotOwned, fmt.Sprintf("not created by the traced tree: the entries of the scratch dir %s are private to the tree that made them (another session's shared memory?)", s))
			}
		}
		// /dev/tty decided by the terminal it names (cttyDecision).
		if pa.Ctty {
			if d := p.cttyDecision(pa); !d.Allow {
				return d
			}
			continue
		}
		// Another terminal of the user read-only still gives its input
		// (what someone types in another ssh session) and, with ioctls,
		// its settings. Checked wherever reads are (the session server,
		// --read, --deny-read, --trace); default open reads never stop.
		if PtySlave(res) && !pa.OwnPty && !p.device(res) {
			return deny(syscall.EACCES, RuleForeignPty, "a terminal the traced tree did not create (its input is another session's; only the tree's own ptys and tracecell's own terminal may be opened)")
		}
		if p.cfg.ReadRoots != nil && !p.readable(res) {
			return deny(syscall.EACCES, RuleReadNotAllowed, "outside readable roots ("+p.readText+")")
		}
		if d, ok := p.rawBlocks(pa); ok {
			return d
		}
	}
	return allow(RuleRead)
}

// rawBlocks denies reading a block device where reads are restricted: a
// tree that may open one (root, or a member of the disk group) reads every
// file stored on it from the raw blocks, deny-read ones and those outside
// --read included, with no open of their paths to check (round 56 of the
// red team). A device the operator names with --allow-device stays
// readable. With open reads (neither --deny-read nor --read) read-only
// opens are not checked at all: the tree may read anything the kernel lets
// it, raw disks too.
func (p *Policy) rawBlocks(pa *Path) (Decision, bool) {
	if !pa.BlockDevice || p.device(pa.Resolved) {
		return Decision{}, false
	}
	const why = "a block device: its raw blocks hold every file stored on it, "
	if len(p.cfg.DenyRead) > 0 {
		return deny(syscall.EACCES, RuleDenyRead, why+"the deny-read ones ("+listSome(p.cfg.DenyRead, 3)+") included; allow it with --allow-device"), true
	}
	if p.cfg.ReadRoots != nil {
		return deny(syscall.EACCES, RuleReadNotAllowed, why+"those outside the readable roots ("+p.readText+") included; allow it with --allow-device"), true
	}
	return Decision{}, false
}

// denyVersions denies res when it is, or lies below, another version of a
// link entry (Config.DenyReadVersions): a path whose first components
// match the pattern.
func (p *Policy) denyVersions(res string) (Decision, bool) {
	for _, v := range p.cfg.DenyReadVersions {
		n := strings.Count(v.Path, "/")
		parts := strings.SplitAfterN(res, "/", n+2)
		if len(parts) < n+1 {
			continue
		}
		prefix := strings.TrimSuffix(strings.Join(parts[:n+1], ""), "/")
		if ok, _ := path.Match(v.Path, prefix); ok && !p.carvedOut(res, denyEntry{path: prefix, of: v.Of}) {
			return deny(syscall.EACCES, RuleDenyRead, "matches deny-read "+v.Of+": "+prefix+" is another version of it beside the one its symlinks lead to (a Kubernetes volume's next ..<time> directory)"), true
		}
	}
	return Decision{}, false
}

// listSome joins the first n of list, and says how many more there are.
func listSome(list []string, n int) string {
	if len(list) <= n {
		return strings.Join(list, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(list[:n], ", "), len(list)-n)
}

// MayKnow reports whether the traced tree may learn whether res exists
// from an errno (EEXIST, ENOENT) instead of a denial: not for a deny-read
// path, nor for one outside the readable roots when reads are restricted.
func (p *Policy) MayKnow(res string) bool {
	if !clean(res) {
		return false
	}
	if _, denied := p.denyRead(res); denied {
		return false
	}
	return p.cfg.ReadRoots == nil || p.readable(res)
}

func (p *Policy) readable(res string) bool {
	for _, list := range [][]string{p.cfg.ReadRoots, p.cfg.WriteRoots, p.cfg.RuntimeRoots, p.cfg.Scratch} {
		for _, r := range list {
			if Under(res, r) {
				return true
			}
		}
	}
	return p.device(res) || Under(res, "/proc")
}

// decideExec: the initial command always runs; anything else only if its
// resolved program is listed exactly or matches an exec pattern.
func (p *Policy) decideExec(op *Op) Decision {
	if op.Initial {
		return allow(RuleInitialExec)
	}
	if len(op.Paths) == 0 {
		return deny(syscall.EACCES, RuleExecNotAllowed, "exec without a program path (allowed: "+p.execText+")")
	}
	prog := op.Paths[0].Resolved
	for _, a := range p.cfg.AllowExec {
		if prog == a {
			return allow(RuleAllowExec)
		}
	}
	for _, x := range p.cfg.AllowExecPatterns {
		if ExecPatternMatch(x, prog) {
			return allow(RuleAllowExec)
		}
	}
	return deny(syscall.EACCES, RuleExecNotAllowed, fmt.Sprintf("exec of %s not allowed (allowed: %s)", prog, p.execText))
}

// IsExecPattern reports whether an --allow-exec value is a pattern rather
// than a program: it holds one of path.Match's special characters.
func IsExecPattern(s string) bool { return strings.ContainsAny(s, "*?[\\") }

// CheckExecPattern validates an exec pattern: absolute, clean and valid for
// path.Match.
func CheckExecPattern(x string) error {
	if err := checkPath("exec pattern", x); err != nil {
		return err
	}
	if _, err := path.Match(x, "/"); err != nil {
		return fmt.Errorf("exec pattern %q: %w (use '*', '?' and '[...]' as in a shell glob)", x, err)
	}
	return nil
}

// ExecPatternMatch reports whether the resolved program prog matches the
// exec pattern x. A pattern never matches a path with more components than
// it has ('*' does not cross '/'), so "/usr/bin/*" does not allow
// "/usr/bin/sub/prog".
func ExecPatternMatch(x, prog string) bool {
	if !clean(prog) {
		return false
	}
	ok, err := path.Match(x, prog)
	return err == nil && ok
}

// ExecPatternBase is the pattern's leading directory with no special
// characters ("/usr/bin" for "/usr/bin/*", "/" for "/*/bin/x").
func ExecPatternBase(x string) string {
	i := strings.IndexAny(x, "*?[\\")
	if i < 0 {
		return x
	}
	return path.Dir(x[:i+1])
}
