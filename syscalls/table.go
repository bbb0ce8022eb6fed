package syscalls

import (
	"runtime"
	"strconv"
	"sync"
)

// Audit architecture values of seccomp_data.arch (include/uapi/linux/audit.h).
const (
	AuditArchX86_64  = 0xc000003e // EM_X86_64 | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE
	AuditArchAARCH64 = 0xc00000b7 // EM_AARCH64 | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE
)

// X32SyscallBit is __X32_SYSCALL_BIT: x86_64 tasks reach the x32 ABI by
// setting it in the syscall number; the audit arch stays AUDIT_ARCH_X86_64.
const X32SyscallBit = 0x40000000

// OpenFlagBits are the open(2) flags whose values differ between ABIs.
// arch/arm64/include/uapi/asm/fcntl.h swaps them against asm-generic (which
// x86_64 uses): the other flags, and so OpenWriteMask, are the same on both.
type OpenFlagBits struct {
	Directory uint64 // O_DIRECTORY
	NoFollow  uint64 // O_NOFOLLOW
	Direct    uint64 // O_DIRECT
	LargeFile uint64 // O_LARGEFILE
}

// Table is the system call table of one ABI.
type Table struct {
	// ABI is "x86_64" or "aarch64", as in reports. (The field cannot be
	// called Name: Name(nr) is the number-to-name method.)
	ABI       string
	AuditArch uint32 // seccomp_data.arch of this ABI
	Max       int    // highest known system call number
	X32Bit    uint32 // X32SyscallBit on x86_64, 0 elsewhere
	Open      OpenFlagBits

	names []string // by number; "" for gaps
	// byName is the name-to-number index, built on the first Nr: a
	// process uses the table of one ABI at most, and a short-lived one
	// (tracecell --version) none, so neither map is built at start-up.
	// A pointer, so that a copied Table shares it as it shared the map.
	byName *nameIndex
}

type nameIndex struct {
	once sync.Once
	nrs  map[string]int
}

func newTable(name string, audit uint32, x32 uint32, open OpenFlagBits, names []string) *Table {
	t := &Table{ABI: name, AuditArch: audit, X32Bit: x32, Open: open, names: names, byName: &nameIndex{}}
	for nr := len(names) - 1; nr >= 0; nr-- {
		if names[nr] != "" {
			t.Max = nr
			break
		}
	}
	return t
}

// nrs returns the name-to-number map, building it on the first call.
func (t *Table) nrs() map[string]int {
	x := t.byName
	if x == nil { // a Table not made by newTable has no names
		return nil
	}
	x.once.Do(func() {
		x.nrs = make(map[string]int, len(t.names))
		for nr, n := range t.names {
			if n != "" {
				x.nrs[n] = nr
			}
		}
	})
	return x.nrs
}

var (
	// AMD64 is the x86_64 (64-bit) ABI. The x32 and i386 ABIs are not
	// supported: the filter kills a task that uses them.
	AMD64 = newTable("x86_64", AuditArchX86_64, X32SyscallBit,
		OpenFlagBits{Directory: 0o200000, NoFollow: 0o400000, Direct: 0o40000, LargeFile: 0o100000},
		x86_64Names[:])
	// ARM64 is the aarch64 ABI. AArch32 (compat) tasks are killed by the
	// filter.
	ARM64 = newTable("aarch64", AuditArchAARCH64, 0,
		OpenFlagBits{Directory: 0o40000, NoFollow: 0o100000, Direct: 0o200000, LargeFile: 0o400000},
		aarch64Names[:])
)

// Native returns the table of the ABI this binary runs in, nil when
// tracecell does not support the architecture.
func Native() *Table {
	return ForGOARCH(runtime.GOARCH)
}

// ForGOARCH returns the table for a GOARCH value ("amd64", "arm64"), nil
// when unsupported.
func ForGOARCH(goarch string) *Table {
	switch goarch {
	case "amd64":
		return AMD64
	case "arm64":
		return ARM64
	}
	return nil
}

// Nr returns the number of a system call on this ABI.
func (t *Table) Nr(name string) (int, bool) {
	nr, ok := t.nrs()[name]
	return nr, ok
}

// Name returns the name of a system call number, "syscall_N" when the
// number is unknown (a gap, a negative number, or newer than the table).
func (t *Table) Name(nr int) string {
	if nr >= 0 && nr < len(t.names) && t.names[nr] != "" {
		return t.names[nr]
	}
	return "syscall_" + strconv.Itoa(nr)
}

// Names returns every known system call name of the ABI in number order.
func (t *Table) Names() []string {
	out := make([]string, 0, len(t.nrs()))
	for _, n := range t.names {
		if n != "" {
			out = append(out, n)
		}
	}
	return out
}
