// Package filter builds tracecell's seccomp-bpf program for one ABI.
//
// The program answers SECCOMP_RET_TRACE for the calls the tracer must see,
// SECCOMP_RET_ALLOW for everything else, SECCOMP_RET_TRAP for a foreign
// arch (i386 via int 0x80, AArch32) and SECCOMP_RET_TRACE for x32 calls
// (either way the tracer reports the call and kills the process), and
// ENOSYS for numbers the tables do not know and for clone3 and openat2.
//
// Why not go-seccomp-bpf's Policy (v1.6.0): Policy.Assemble takes its ABI
// from runtime.GOARCH (the arch field is unexported), so it cannot build the
// aarch64 program on an x86_64 host, and it uses its own syscall tables, not
// ours. Two properties of its code generation also rule it out here, both
// checked in the VM while writing this package:
//   - an Equal/NotEqual condition compares the high 32 bits of the argument
//     too, so ioctl(fd, TIOCSTI|1<<32) would miss a cmd == TIOCSTI rule
//     although the kernel truncates cmd to an unsigned int;
//   - after an argument check fails it falls through to the next syscall
//     number comparison with the accumulator still holding the argument
//     (openat with flags 44 then matched sendto, nr 44).
//
// So the program is assembled here with golang.org/x/net/bpf. Its layout
// makes both mistakes impossible: integer arguments are compared on their
// low 32 bits only (addresses and lengths, which are unsigned long, on both
// halves: appendMemCheck), and every argument check ends in a return, so no
// comparison ever runs on a clobbered accumulator.
//
// Layout: the guard (arch, number range, x32), then a binary search over the
// sorted numbers of the handled calls (about 7 comparisons for any call,
// instead of one per trapped call), leaves of at most leafSize calls.
package filter

import (
	"cmp"
	"fmt"
	"slices"
	"sort"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/syscalls"
)

// seccomp(2) return values (include/uapi/linux/seccomp.h), as x/sys/unix
// names them.
const (
	RetKillProcess = unix.SECCOMP_RET_KILL_PROCESS // 4.14
	RetTrap        = unix.SECCOMP_RET_TRAP         // 3.5
	RetErrno       = unix.SECCOMP_RET_ERRNO        // | errno
	RetTrace       = unix.SECCOMP_RET_TRACE
	RetAllow       = unix.SECCOMP_RET_ALLOW

	// enosys is ENOSYS (38): asm-generic/errno-base.h, the same on x86_64
	// and aarch64, so the host's value serves the program of either ABI.
	enosys = uint32(unix.ENOSYS)

	// RetENOSYS fails a call with ENOSYS inside the filter, without a stop.
	RetENOSYS = RetErrno | enosys
)

// struct seccomp_data { int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6]; }
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
	// SeccompDataSize is sizeof(struct seccomp_data).
	SeccompDataSize = 64
)

// MaxInstructions is BPF_MAXINSNS, the kernel's limit on a filter.
const MaxInstructions = 4096

// Options select what the filter traps beyond the always-trapped calls.
type Options struct {
	Table *syscalls.Table
	// TrapReadOpens traps read-only open/openat too: reads are restricted
	// (--read, --deny-read) or every decision is traced (--trace).
	TrapReadOpens bool
	// TrapAllClones traps every clone, fork and vfork (--max-procs).
	// Otherwise only clone with a CloneForbiddenMask flag is trapped.
	TrapAllClones bool
	// TrapNet traps connect, sendto (with an address), sendmsg, sendmmsg
	// and listen. bind is always trapped: an AF_UNIX bind creates a file.
	TrapNet bool
	// PathPage traps the memory calls (syscalls.HMem: mmap, munmap,
	// mprotect, pkey_mprotect, madvise, mremap, remap_file_pages) whose
	// address ranges may reach the path page (syscalls.PathPageAddr), and
	// only those: they are among the most frequent calls. Set it when the
	// tracer uses the path page (enforce mode with the freeze on). Without
	// it these calls are not in the filter at all: there is no page to
	// protect.
	PathPage bool
}

// cond is the argument test of a conditional rule: the call is trapped when
// the test is true and allowed otherwise.
type cond struct {
	arg int
	// anyBits: trap when the low 32 bits share a bit with mask (an int
	// flags argument; the kernel ignores the high half).
	anyBits bool
	mask    uint32
	// noBits: trap when the low 32 bits share no bit with mask (futex
	// without FUTEX_PRIVATE_FLAG).
	noBits bool
	// oneOf: trap when the low 32 bits equal one of vals (an int or
	// unsigned int command).
	vals []uint32
	// allowVals (sorted, no duplicates): allow when the low 32 bits equal
	// one of them and trap otherwise (an allow-list of commands).
	allowVals []uint32
	// nonZero64: trap when the whole 64-bit argument is not 0 (a pointer).
	nonZero64 bool
	// mem: trap when one of the ranges may overlap the path page
	// (appendMemCheck); arg is unused.
	mem []syscalls.MemRange
}

// check rejects a cond the code generation cannot express: an argument
// index outside seccomp_data's six, a range test without a flag mask.
func (c *cond) check() error {
	if len(c.mem) == 0 {
		if c.arg < 0 || c.arg > 5 {
			return fmt.Errorf("bad argument index %d", c.arg)
		}
		for i := 1; i < len(c.allowVals); i++ {
			if c.allowVals[i] <= c.allowVals[i-1] {
				return fmt.Errorf("allowed values not sorted or repeated at %#x", c.allowVals[i])
			}
		}
		return nil
	}
	for i, r := range c.mem {
		if r.Addr < 0 || r.Addr > 5 || r.Len < 0 || r.Len > 5 || r.FlagsArg < -1 || r.FlagsArg > 5 {
			return fmt.Errorf("range %d: bad argument index in %+v", i, r)
		}
		if r.FlagsArg >= 0 && r.FlagsMask == 0 {
			return fmt.Errorf("range %d: flags argument %d without a mask", i, r.FlagsArg)
		}
	}
	return nil
}

// rule is what the filter does for one syscall number.
type rule struct {
	nr   uint32
	name string
	ret  uint32 // RetTrace or RetENOSYS when c is nil
	c    *cond  // nil: unconditional
}

// rules computes the per-call decisions of o, sorted by number.
func rules(o Options) ([]rule, error) {
	t := o.Table
	if t == nil {
		return nil, fmt.Errorf("no syscall table: unsupported architecture")
	}
	all := syscalls.All()
	rs := make([]rule, 0, len(all)+2)
	add := func(name string, ret uint32, c *cond) {
		if nr, ok := t.Nr(name); ok {
			rs = append(rs, rule{nr: uint32(nr), name: name, ret: ret, c: c})
		}
	}
	// clone3 passes its flags in memory, where the filter cannot look;
	// glibc (2.34+) falls back to clone on ENOSYS. openat2 likewise hides
	// its flags in struct open_how; glibc never needs it (5.6+ only).
	add("clone3", RetENOSYS, nil)
	add("openat2", RetENOSYS, nil)
	for _, s := range all {
		var c *cond
		if s.Handler == syscalls.HMem {
			if !o.PathPage {
				continue
			}
			if len(s.Mem) > 0 {
				c = &cond{mem: s.Mem}
			} // else its ranges are in memory (process_madvise): always trapped

		}
		if s.Kind == syscalls.KindRead && s.Handler == syscalls.HPath && !o.TrapReadOpens {
			// getxattr, listxattr, inotify_add_watch: checked like
			// reads, so only when reads are.
			continue
		}
		switch s.Name {
		case "futex", "futex_wait", "futex_wake":
			// A private futex is keyed by the caller's mm: it reaches no
			// other process. glibc's mutexes, condition variables and
			// unnamed semaphores use private futexes; only process-shared
			// ones (named semaphores, PTHREAD_PROCESS_SHARED) stop.
			c = &cond{arg: s.FlagsArg, noBits: true, mask: syscalls.FutexPrivateFlag}
		case "open", "openat":
			if !o.TrapReadOpens {
				c = &cond{arg: s.FlagsArg, anyBits: true, mask: syscalls.OpenWriteMask}
			}
		case "clone":
			if !o.TrapAllClones {
				c = &cond{arg: s.FlagsArg, anyBits: true, mask: syscalls.CloneForbiddenMask}
			}
		case "fork", "vfork":
			if !o.TrapAllClones {
				continue
			}
		case "setsockopt":
			if !o.TrapNet {
				continue
			}
			c = &cond{arg: s.FlagsArg, vals: syscalls.SetsockoptTrapped}
		case "connect", "sendmsg", "sendmmsg", "listen", "socket":
			if !o.TrapNet {
				continue
			}
		case "sendto":
			if !o.TrapNet {
				continue
			}
			// A NULL dest_addr sends on a connected socket, whose
			// connect was checked.
			c = &cond{arg: s.AddrArg, nonZero64: true}
		case "ioctl":
			// An allow-list (issue 16): the commands programs are
			// measured to use that only read or act on their own fd
			// pass; every other one stops and is decided
			// (syscalls.IoctlAllowed). The cmd is an unsigned int:
			// compared on its low 32 bits, as the kernel reads it.
			c = &cond{arg: s.FlagsArg, allowVals: syscalls.IoctlAllowedCmds()}
		case "fcntl":
			c = &cond{arg: s.FlagsArg, vals: []uint32{syscalls.FcntlSetFl, syscalls.FcntlSetOwn, syscalls.FcntlSetOwnEx, syscalls.FcntlSetLease, syscalls.FcntlSetDeleg, syscalls.FcntlSetRwHint}}
		case "seccomp":
			c = &cond{arg: s.FlagsArg, anyBits: true, mask: syscalls.SeccompFilterFlagNewListener}
		case "prctl":
			c = &cond{arg: s.FlagsArg, vals: syscalls.PrctlTrapped}
		}
		if c != nil {
			if err := c.check(); err != nil {
				return nil, fmt.Errorf("%s: %w", s.Name, err)
			}
		}
		add(s.Name, RetTrace, c)
	}
	slices.SortFunc(rs, func(a, b rule) int { return cmp.Compare(a.nr, b.nr) })
	for i := 1; i < len(rs); i++ {
		if rs[i].nr == rs[i-1].nr {
			return nil, fmt.Errorf("%s and %s share number %d on %s", rs[i-1].name, rs[i].name, rs[i].nr, t.ABI)
		}
	}
	return rs, nil
}

// Trapped returns the sorted names of the calls that o makes stop in the
// tracer, always or depending on their arguments. clone3 and openat2 are
// not listed: the filter fails them with ENOSYS.
func Trapped(o Options) []string {
	rs, err := rules(o)
	if err != nil {
		return nil
	}
	var out []string
	for _, r := range rs {
		if r.ret == RetTrace {
			out = append(out, r.name)
		}
	}
	sort.Strings(out)
	return out
}

// Build returns the filter program for o.
func Build(o Options) ([]bpf.Instruction, error) {
	rs, err := rules(o)
	if err != nil {
		return nil, err
	}
	return program(o.Table, rs)
}

// program assembles the guard for t and the search over rs.
func program(t *syscalls.Table, rs []rule) ([]bpf.Instruction, error) {
	// About 3 instructions a call: room for the whole program up front.
	prog := make([]bpf.Instruction, 0, 16+4*len(rs))
	prog = append(prog,
		// A call of another ABI (i386 through int 0x80 on x86_64, AArch32
		// on arm64) has other numbers: it must never run unchecked
		// (go-seccomp-bpf would send it to the default action). RET_TRAP
		// skips it and sends SIGSYS, whose siginfo the kernel fills with
		// the call's arch and number (si_arch, si_syscall): the tracer
		// reports them and kills the process (tracer/foreign.go). No
		// filter the tree adds can let the call run: only KILL outranks
		// TRAP, and ERRNO, TRACE and ALLOW rank below it.
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: t.AuditArch, SkipTrue: 1},
		bpf.RetConstant{Val: RetTrap},
		bpf.LoadAbsolute{Off: offNr, Size: 4},
	)
	// Numbers above the table: ENOSYS, except the x32 ABI on x86_64
	// (numbers with __X32_SYSCALL_BIT, below 1<<31), which is trapped: the
	// tracer sees the bit in the number, reports the call and kills the
	// process (tracer/foreign.go). A filter of the tree's own cannot let
	// it through: RET_TRACE outranks RET_ALLOW.
	// Negative numbers (>= 1<<31 unsigned) are never x32 calls (the kernel
	// takes them as out of range and returns ENOSYS) and get ENOSYS here
	// too, so a stray syscall(-1) is not fatal. Numbers up to Max skip this
	// block with one comparison: the common path costs 5 instructions
	// before the search.
	var high []bpf.Instruction
	if t.X32Bit != 0 {
		high = append(high,
			bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: 0x80000000, SkipTrue: 2},
			bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: t.X32Bit, SkipFalse: 1},
			bpf.RetConstant{Val: RetTrace},
		)
	}
	high = append(high, bpf.RetConstant{Val: RetENOSYS})
	prog = append(prog, bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: uint32(t.Max), SkipFalse: uint8(len(high))})
	prog = append(prog, high...)
	prog, err := appendSearch(prog, rs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.ABI, err)
	}
	if len(prog) > MaxInstructions {
		return nil, fmt.Errorf("%s: %d instructions, the kernel allows %d", t.ABI, len(prog), MaxInstructions)
	}
	return prog, nil
}

// Raw returns the assembled program, ready for seccomp(2) or
// prctl(PR_SET_SECCOMP): the precomputed one of the build's ABI when there
// is one (programs.go), else Assemble's.
func Raw(o Options) ([]bpf.RawInstruction, error) {
	if raw := precomputed(o); raw != nil {
		return raw, nil
	}
	return Assemble(o)
}

// Assemble builds and assembles the program for o.
func Assemble(o Options) ([]bpf.RawInstruction, error) {
	prog, err := Build(o)
	if err != nil {
		return nil, err
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("assemble %s program: %w", o.Table.ABI, err)
	}
	return raw, nil
}

// leafSize is the largest group of calls tested one after the other.
const leafSize = 4

// appendSearch appends the decision code for rs (sorted by number, the
// accumulator holding the number) to out. Every path through the code ends
// in a return. The whole program is written into one slice: each half is
// appended in place and the jump in front of it filled in once its length
// is known, rather than every level of the recursion allocating and
// copying its own list.
func appendSearch(out []bpf.Instruction, rs []rule) ([]bpf.Instruction, error) {
	if len(rs) <= leafSize {
		return appendLeaf(out, rs)
	}
	mid := len(rs) / 2
	// nr > last number of the left half: go right.
	pivot := rs[mid-1].nr
	at := len(out)
	out = append(out, nil) // the jump over the left half, set below
	out, err := appendSearch(out, rs[:mid])
	if err != nil {
		return nil, err
	}
	if n := len(out) - at - 1; n <= 255 {
		out[at] = bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: pivot, SkipTrue: uint8(n)}
	} else {
		// Conditional jumps reach 255 instructions; ja reaches 2^32. The
		// left half moves down one: its jumps are relative.
		out = slices.Insert(out, at+1, bpf.Instruction(bpf.Jump{Skip: uint32(n)}))
		out[at] = bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: pivot, SkipFalse: 1}
	}
	return appendSearch(out, rs[mid:])
}

// appendLeaf appends code that tests each call of rs in turn and allows
// anything else.
func appendLeaf(out []bpf.Instruction, rs []rule) ([]bpf.Instruction, error) {
	for _, r := range rs {
		at := len(out)
		out = append(out, nil) // the test of the number, set below
		if r.c == nil {
			out = append(out, bpf.RetConstant{Val: r.ret})
		} else {
			out = appendArgCheck(out, *r.c)
		}
		n := len(out) - at - 1
		if n <= 255 {
			// Not this call: skip its block (which ends in returns).
			out[at] = bpf.JumpIf{Cond: bpf.JumpEqual, Val: r.nr, SkipFalse: uint8(n)}
			continue
		}
		// A block longer than a conditional jump reaches (the ioctl
		// allow-list): this call enters it past a ja that skips it.
		// The block's own jumps are relative, so it may move down one.
		out = slices.Insert(out, at+1, bpf.Instruction(bpf.Jump{Skip: uint32(n)}))
		out[at] = bpf.JumpIf{Cond: bpf.JumpEqual, Val: r.nr, SkipTrue: 1}
	}
	return append(out, bpf.RetConstant{Val: RetAllow}), nil
}

// appendArgCheck appends the test of c: trace when true, allow when false.
// It overwrites the accumulator, which is why it must end in returns.
func appendArgCheck(out []bpf.Instruction, c cond) []bpf.Instruction {
	lo := bpf.LoadAbsolute{Off: uint32(offArgs + 8*c.arg), Size: 4}
	hi := bpf.LoadAbsolute{Off: uint32(offArgs + 8*c.arg + 4), Size: 4}
	trace, allow := bpf.RetConstant{Val: RetTrace}, bpf.RetConstant{Val: RetAllow}
	switch {
	case len(c.mem) > 0:
		return append(appendMemCheck(out, c.mem), allow)
	case c.anyBits:
		return append(out, lo, bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: c.mask, SkipFalse: 1}, trace, allow)
	case c.noBits:
		return append(out, lo, bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: c.mask, SkipFalse: 1}, allow, trace)
	case c.nonZero64:
		return append(out,
			lo, bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: 0, SkipTrue: 2},
			hi, bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0, SkipTrue: 1},
			trace, allow,
		)
	case c.allowVals != nil:
		return appendAllowSet(append(out, lo), c.allowVals)
	}
	out = append(out, lo)
	n := len(c.vals)
	for i, v := range c.vals {
		// Jump to the trace return after the last comparison.
		out = append(out, bpf.JumpIf{Cond: bpf.JumpEqual, Val: v, SkipTrue: uint8(n - 1 - i + 1)})
	}
	return append(out, allow, trace)
}

// allowLeaf is the largest group of allowed values compared one after the
// other in appendAllowSet.
const allowLeaf = 8

// appendAllowSet appends a binary search of the accumulator (the low 32
// bits of the argument) over vals, sorted: RET_ALLOW when it is one of
// them, RET_TRACE otherwise. Each leaf ends in its own pair of returns, so
// every jump stays short; a command costs about log2(len(vals)/allowLeaf)
// + allowLeaf comparisons at most (4 + 6 for the 84 commands of
// syscalls.IoctlAllowed, in 131 instructions: about 1.6 a value).
func appendAllowSet(out []bpf.Instruction, vals []uint32) []bpf.Instruction {
	if len(vals) <= allowLeaf {
		n := len(vals)
		for i, v := range vals {
			// Equal: to the allow return after the last comparison's
			// trace return.
			out = append(out, bpf.JumpIf{Cond: bpf.JumpEqual, Val: v, SkipTrue: uint8(n - i)})
		}
		return append(out, bpf.RetConstant{Val: RetTrace}, bpf.RetConstant{Val: RetAllow})
	}
	mid := len(vals) / 2
	at := len(out)
	out = append(out, nil) // A > vals[mid-1]: to the right half, set below
	out = appendAllowSet(out, vals[:mid])
	if n := len(out) - at - 1; n <= 255 {
		out[at] = bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: vals[mid-1], SkipTrue: uint8(n)}
	} else {
		out = slices.Insert(out, at+1, bpf.Instruction(bpf.Jump{Skip: uint32(n)}))
		out[at] = bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: vals[mid-1], SkipFalse: 1}
	}
	return appendAllowSet(out, vals[mid:])
}

// The range test below works on 32-bit halves and depends on where the path
// page is: it starts at 8 GiB exactly (a high word of 2, a low word of 0)
// and ends below 12 GiB (PathPageSize fits the low word). These constants
// fail to compile ("overflows uint64") when syscalls moves or grows the
// page: appendMemCheck must be rewritten then.
const (
	_ = syscalls.PathPageAddr - 2<<32
	_ = 2<<32 - syscalls.PathPageAddr
	_ = syscalls.PathPageSize - 1         // not empty
	_ = 1<<32 - 1 - syscalls.PathPageSize // below 4 GiB
)

// tagFree keeps the address bits that no kernel untagging clears: the
// high-word mask of appendMemCheck. mprotect, pkey_mprotect, madvise and
// mremap's old address (5.4, 057d3389108e) and munmap (5.4, ce18d171cb73)
// pass the address through untagged_addr(), and so did mmap and mremap's
// new address on 5.4 and 5.5 (until dcde237319e6). It clears the top byte
// on arm64 once the task enables the tagged address ABI
// (PR_SET_TAGGED_ADDR_CTRL), and bits 57-62 on x86_64 with LAM (6.4,
// ARCH_ENABLE_TAGGED_ADDR): munmap of a tagged pointer to the page has a
// high word far above 2 and would pass an unmasked test. Clearing bits
// 48-63 is more than either ABI clears, which only ever adds traps: an
// address the kernel leaves with one of those bits set is at or above
// 2^48, past the page. Ordinary user addresses are below 2^48 (x86_64
// with 4-level page tables, arm64 with 48-bit VAs) and keep their high
// word.
const tagFree = 0x0000ffff

// appendMemCheck appends the test of an HMem call's ranges: for each range
// in turn, trace when it is in use (no flags argument, or its flag bit
// set) and may overlap the path page [PathPageAddr, PathPageAddr +
// PathPageSize); after the last, fall through to the caller's allow. Only
// the false exits leave a range's code, to the next range's first
// instruction (a load), so no test runs on a clobbered accumulator.
//
// The test reads registers only, so it is coarse, but ordinary programs
// never meet a trap: their addresses are above 12 GiB (x86_64 PIE binaries
// and mmap at 0x55.../0x7f..., arm64 likewise) or, for non-PIE binaries,
// below 4 GiB with small lengths. With A the address's high word (bits
// 48-63 cleared, see tagFree):
//   - A > 2: the range starts at 12 GiB or above, after the page: no;
//   - A == 2: yes when the low word is inside the page: the range starts
//     in it (starting after its end it cannot reach it);
//   - A == 1: yes, [4 GiB, 8 GiB) is rare enough to leave to the tracer,
//     which computes the range exactly (tracer: decodeMem);
//   - A == 0: yes when the length is 4 GiB or more. Below that the range
//     ends before 8 GiB even once the kernel rounds the length up to a
//     page (4 GiB is a multiple of every page and huge page size), and a
//     range that wraps around 2^64 the kernel refuses (EINVAL, ENOMEM).
//
// Flags are compared on their low 32 bits: mmap's and mremap's flags are
// unsigned long, but MAP_FIXED and MREMAP_FIXED are low bits, so bits of
// the high half cannot set them. Addresses and lengths are unsigned long:
// both halves count. mmap without MAP_FIXED, with MAP_FIXED_NOREPLACE
// alone (its own bit, 4.17: fails with EEXIST rather than replace; older
// kernels ignore it and take the address as a hint) or mremap without
// MREMAP_FIXED never replace a mapping, so their address is a hint that
// need not be checked. The tracer's own mmap of the page uses
// MAP_FIXED_NOREPLACE and so passes without a second stop.
func appendMemCheck(out []bpf.Instruction, ranges []syscalls.MemRange) []bpf.Instruction {
	// Positions in a range's code, after the flags test.
	const (
		loadHi  = iota // ld addr.hi
		mask           // and tagFree
		above          // jgt 2: after the page
		inPage         // jeq 2: maybe in the page
		low            // jeq 1: in [4 GiB, 8 GiB)
		loadLen        // ld len.hi (A == 0)
		longLen        // jeq 0: a length below 4 GiB cannot reach 8 GiB
		loadLo         // ld addr.lo (A == 2)
		pastEnd        // jge PathPageSize: starts after the page
		trace          // ret TRACE
		end            // the next range, or the caller's allow
	)
	skip := func(from, to int) uint8 { return uint8(to - from - 1) }
	half := func(arg, word int) bpf.LoadAbsolute {
		return bpf.LoadAbsolute{Off: uint32(offArgs + 8*arg + 4*word), Size: 4}
	}
	for _, r := range ranges {
		if r.FlagsArg >= 0 {
			// Not in use without the flag bit: go to the next range.
			out = append(out, half(r.FlagsArg, 0), bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: r.FlagsMask, SkipFalse: skip(-1, end)})
		}
		out = append(out,
			half(r.Addr, 1),
			bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: tagFree},
			bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: 2, SkipTrue: skip(above, end)},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: 2, SkipTrue: skip(inPage, loadLo)},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: 1, SkipTrue: skip(low, trace)},
			half(r.Len, 1),
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0, SkipTrue: skip(longLen, end), SkipFalse: skip(longLen, trace)},
			half(r.Addr, 0),
			bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: uint32(syscalls.PathPageSize), SkipTrue: skip(pastEnd, end)},
			bpf.RetConstant{Val: RetTrace},
		)
	}
	return out
}
