package tracer

import (
	"fmt"
	"os"

	"github.com/tracecell/tracecell/internal/procfs"
	"github.com/tracecell/tracecell/syscalls"
)

// pathPage is the run's view of the path page (pathpage.go): whether it is
// used, which of its slots are free, and what it has done.
//
// Invariants: a slot is either in freeSlots or held by exactly one call in
// flight — a copied call's task (task.slot), a frozen call's task
// (task.copies) or a call being decided (call.slot, call.copies) — and is
// put back once (put) when that call ends, dies or is denied; with on
// false, freeSlots is empty and nothing is ever copied. off, once set,
// stays set. Only the tracer thread uses it.
type pathPage struct {
	// on: copyable calls run with their path copied into the path page
	// instead of a freeze (pathpage.go); the filter traps the memory
	// calls that could reach the page. Only where calls would freeze
	// (usePathPage).
	on bool
	// freeSlots are the slots no call in flight holds, taken from the end.
	freeSlots []int
	// seccompBase is the Seccomp_filters of a process of the tree that
	// added none of its own: those the root inherited from the tracer
	// thread at its fork (tracecell never loads one itself) and the one it
	// loaded before its exec. -1 when unknown (ownFilter). Read at the
	// first need (baseRead) rather than at the root's exec, where the
	// read of /proc/<pid>/status held the command's start by ~40 µs.
	seccompBase int
	baseRead    bool
	// ever: some process has had the page; off: a memory call reached its
	// range before that, so no process gets it (decodeMem).
	ever, off bool
	// copies and maps count copied calls and page mappings (tests);
	// frozenCopies counts arguments of frozen calls run on copies.
	copies, maps, frozenCopies int
}

// init readies pg for a run that uses the page (on) or not, every slot
// free.
func (pg *pathPage) init(on bool) {
	*pg = pathPage{on: on, seccompBase: -1}
	if on {
		for i := syscalls.PathSlots - 1; i >= 0; i-- {
			pg.freeSlots = append(pg.freeSlots, i)
		}
	}
}

// usable reports whether the run uses the path page at all.
func (pg *pathPage) usable() bool { return pg.on && !pg.off }

// take returns a free slot, or -1 when every slot holds a call in flight
// (the call then freezes).
func (pg *pathPage) take() int {
	n := len(pg.freeSlots)
	if n == 0 {
		return -1
	}
	i := pg.freeSlots[n-1]
	pg.freeSlots = pg.freeSlots[:n-1]
	return i
}

// put frees slot i.
func (pg *pathPage) put(i int) { pg.freeSlots = append(pg.freeSlots, i) }

// release frees the slots of tk's calls in flight: the slot of its copied
// call and those of its frozen call on copies. For a task that died, or
// exec'd, in such a call.
func (pg *pathPage) release(tk *task) {
	if tk.slot != 0 {
		pg.put(tk.slot - 1)
		tk.slot = 0
	}
	pg.freeCopies(tk)
}

// freeCopies frees the slots of a task that died or exec'd in a call that
// ran on copies.
func (pg *pathPage) freeCopies(tk *task) {
	for _, a := range tk.copies {
		pg.put(a.slot)
	}
	tk.copies = nil
}

// dropCopies frees the slots of a call that will not run on them.
func (pg *pathPage) dropCopies(c *call) {
	for _, a := range c.copies {
		pg.put(a.slot)
	}
	c.copies = nil
}

// ownFilter reports whether tid runs under a seccomp filter the tree
// installed itself (more filters than the root had after its initial exec,
// /proc/<tid>/status Seccomp_filters, 5.9). The injected mmap would meet it:
// a filter that traps or kills unusual mmap flags (MAP_FIXED_NOREPLACE), as
// sandboxes that emulate calls in a SIGSYS handler do, would get a SIGSYS
// for a call the program never made, or die of it. Such a process keeps
// the freeze. Unknown (older kernels): no.
//
// Precondition: called on the tracer thread (the root's filters were
// inherited from it).
func (pg *pathPage) ownFilter(tid int) bool {
	if !pg.baseRead {
		pg.baseRead = true
		if n := seccompFiltersAt("/proc/thread-self/status"); n >= 0 {
			pg.seccompBase = n + 1
		}
	}
	return pg.seccompBase >= 0 && seccompFilters(tid) > pg.seccompBase
}

// noPageWhy says why tk's process has no path page, for a denial.
func (pg *pathPage) noPageWhy(tk *task) string {
	switch {
	case pg.off:
		return fmt.Sprintf("the program mapped memory over %#x-%#x, where tracecell keeps its path page, before it was used", syscalls.PathPageAddr, syscalls.PathPageAddr+syscalls.PathPageSize)
	case pg.ownFilter(tk.tid):
		return "the process runs under a seccomp filter of its own, so tracecell does not map its path page into it"
	}
	return fmt.Sprintf("its path page could not be mapped (the range %#x-%#x is taken)", syscalls.PathPageAddr, syscalls.PathPageAddr+syscalls.PathPageSize)
}

// memFile is the /proc/<tid>/mem of tid's process p, opened on first use
// and kept until the process execs or ends: it refers to the address space
// it was opened on.
func (p *proc) memFile(tid int) (*os.File, error) {
	if p.mem != nil {
		return p.mem, nil
	}
	f, err := os.OpenFile(fmt.Sprintf("/proc/%d/mem", tid), os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	p.mem = f
	return f, nil
}

// dropMaps closes p's procmap.Maps: its address space is gone (exec, exit),
// or the fd no longer answers for it (MapAt opens it again).
func (p *proc) dropMaps() {
	if p.maps != nil {
		p.maps.Close()
		p.maps = nil
	}
}

// dropPage forgets p's page and closes its memory file.
func (p *proc) dropPage() {
	p.page = pageUnknown
	if p.mem != nil {
		p.mem.Close()
		p.mem = nil
	}
}

// seccompFilters is the Seccomp_filters count of /proc/<tid>/status, -1
// when it cannot be read (gone, or a kernel before 5.9).
func seccompFilters(tid int) int {
	return seccompFiltersAt(fmt.Sprintf("/proc/%d/status", tid))
}

// seccompFiltersAt is the Seccomp_filters count of the status file at
// path, -1 when there is none.
func seccompFiltersAt(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return -1
	}
	return procfs.StatusInt(b, "Seccomp_filters:", -1)
}
