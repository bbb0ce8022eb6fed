package decode

import (
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/arch"
	"github.com/tracecell/tracecell/internal/procfs"
	"github.com/tracecell/tracecell/pathres"
	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/syscalls"
)

// abis are the ABIs every table runs on: the syscall numbers, register
// layouts and open flag values differ.
var abis = []struct {
	tbl *syscalls.Table
	l   *arch.Layout
}{{syscalls.AMD64, arch.X86_64}, {syscalls.ARM64, arch.AArch64}}

// fakeFile is one entry of the fake file system.
type fakeFile struct {
	dir     bool
	link    string // a symlink's absolute target
	special string // a /proc magic link to a pipe or socket
	procPid int
	deleted bool
	mode    fs.FileMode // the type bits a stat shows (devices)
}

// fakeEnv is a stopped task without a process: memory by address, a file
// system by path, fds, a tree of pids.
type fakeEnv struct {
	mem     map[uintptr][]byte // bytes at an address; a string without its NUL
	files   map[string]fakeFile
	fds     map[int32]string // fd -> path in files
	cwd     string
	cwdErr  error
	resErr  map[string]error // Resolve of this joined path fails so
	inTree  map[int]bool
	ptys    map[string]bool
	initial string // the root's initial exec, when the call is it
	chain   map[string]bool
	procs   [2]int
	pgrps   map[int]bool
	gone    map[int]bool
	pidfds  map[int32]pidfd
	chr     map[int32]DevID // character device fds
	stdio   map[DevID]bool
	async   map[string]bool
	fdFlags map[string]uint64 // fdinfo flags of a /proc/<pid>/fd/N link
	ctty    Terminal          // the caller's controlling terminal
	fdTerm  map[int32]Terminal
	cttyN   int // Ctty and FdTerminal calls
	// sockets
	frozen       bool
	exitWritable Span // memory an exit could write
	maps         []procfs.Mapping
	mapsErr      error
	loopback     bool
	from         string

	// futexes
	anonPages    map[uint64]bool // pages copied on write
	futexRestart uint64
	tracing      bool

	byteArgs  []int // arguments read as bytes (sockaddrs)
	msgCopies int   // CopyMsg calls
	fromAsked int   // SendFrom calls

	strArgs []int  // arguments read as strings, in order
	follows []bool // follow of every Resolve
}

func newFakeEnv() *fakeEnv {
	return &fakeEnv{
		mem: map[uintptr][]byte{},
		files: map[string]fakeFile{
			"/": {dir: true}, "/home": {dir: true}, "/home/u": {dir: true}, "/home/u/f": {},
			"/home/u/d": {dir: true}, "/home/u/ln": {link: "/etc/passwd"}, "/etc": {dir: true},
			"/etc/passwd": {}, "/secret": {dir: true}, "/usr/bin/python3": {},
			"/dev/pts/3": {}, "/dev/pts/4": {},
			"/dev": {dir: true}, "/dev/vda": {mode: fs.ModeDevice}, "/dev/null": {mode: fs.ModeDevice | fs.ModeCharDevice},
			"/dev/disk": {dir: true}, "/dev/disk/root": {link: "/dev/vda"},
			"/proc/77/fd/3": {special: "pipe:[9]", procPid: 77}, "/memfd:x (deleted)": {deleted: true, procPid: 5},
		},
		fds:    map[int32]string{3: "/home/u/d", 4: "/home/u/f", 5: "/etc", 6: "/proc/77/fd/3", 7: "/memfd:x (deleted)"},
		cwd:    "/home/u",
		inTree: map[int]bool{0: true, 5: true, 10: true},
		ptys:   map[string]bool{"/dev/pts/3": true},
	}
}

// ReadBytes reads from the region that holds all n bytes at addr.
func (e *fakeEnv) ReadBytes(addr uintptr, n int) ([]byte, error) {
	for a, b := range e.mem {
		if addr >= a && addr+uintptr(n) <= a+uintptr(len(b)) {
			return b[addr-a : addr-a+uintptr(n)], nil
		}
	}
	return nil, syscall.EFAULT
}

func (e *fakeEnv) ReadArgString(arg int, addr uintptr) ([]byte, error) {
	e.strArgs = append(e.strArgs, arg)
	b, ok := e.mem[addr]
	if !ok || addr == 0 {
		return nil, syscall.EFAULT
	}
	return b, nil
}

func (e *fakeEnv) Base(dirfd int32, hasDirfd bool) (string, error) {
	if !hasDirfd || dirfd == unix.AT_FDCWD {
		return e.cwd, e.cwdErr
	}
	if dirfd < 0 {
		return "", syscall.EBADF
	}
	p, ok := e.fds[dirfd]
	if !ok {
		return "", syscall.EBADF
	}
	if !e.files[p].dir {
		return "", syscall.ENOTDIR
	}
	return p, nil
}

func (e *fakeEnv) Resolve(base string, given string, follow bool) (pathres.Result, error) {
	e.follows = append(e.follows, follow)
	p := filepath.Join(base, string(given))
	if err := e.resErr[p]; err != nil {
		return pathres.Result{}, err
	}
	return e.lookup(p, follow), nil
}

func (e *fakeEnv) lookup(p string, follow bool) pathres.Result {
	f, ok := e.files[p]
	if ok && follow && f.link != "" {
		return e.lookup(f.link, true)
	}
	if !ok {
		if parent, ok := e.files[filepath.Dir(p)]; !ok || !parent.dir {
			return pathres.Result{Path: p, WalkErr: syscall.ENOENT}
		}
		return pathres.Result{Path: p}
	}
	return pathres.Result{Path: p, Exists: true, IsDir: f.dir, Special: f.special, ProcPid: f.procPid, Deleted: f.deleted, Mode: f.mode}
}

func (e *fakeEnv) ResolveFd(fd int32) (pathres.Result, error) {
	p, ok := e.fds[fd]
	if !ok {
		return pathres.Result{}, syscall.EBADF
	}
	return e.lookup(p, true), nil
}

func (e *fakeEnv) MayKnow(resolved string) bool     { return !strings.HasPrefix(resolved, "/secret") }
func (e *fakeEnv) PidInTree(pid int) bool           { return e.inTree[pid] }
func (e *fakeEnv) OwnsPty(path string) bool         { return e.ptys[path] }
func (e *fakeEnv) DenyLink(string) (string, string) { return "", "" }
func (e *fakeEnv) InitialExec() (string, bool)      { return e.initial, e.initial != "" }
func (e *fakeEnv) ChainExec(resolved string) bool {
	return e.chain[resolved]
}
func (e *fakeEnv) Procs() (n, max int)   { return e.procs[0], e.procs[1] }
func (e *fakeEnv) PgrpInTree(g int) bool { return e.pgrps[g] }
func (e *fakeEnv) PidGone(pid int) bool  { return e.gone[pid] }
func (e *fakeEnv) PidfdPid(fd int32) (int, syscall.Errno, string) {
	p, ok := e.pidfds[fd]
	if !ok {
		return 0, syscall.EBADF, ""
	}
	return p.pid, p.errno, p.why
}
func (e *fakeEnv) StdioTTY(dev DevID) bool                  { return e.stdio[dev] }
func (e *fakeEnv) Ctty() Terminal                           { e.cttyN++; return e.ctty }
func (e *fakeEnv) FdTerminal(fd int32) Terminal             { e.cttyN++; return e.fdTerm[fd] }
func (e *fakeEnv) AsyncOwn(resolved string, dev DevID) bool { return e.async[resolved] }
func (e *fakeEnv) CharDev(fd int32) (DevID, bool) {
	d, ok := e.chr[fd]
	return d, ok
}
func (e *fakeEnv) FdLink(fd int32) (string, bool) {
	p, ok := e.fds[fd]
	return p, ok
}
func (e *fakeEnv) FdFlags(resolved string) (uint64, bool) {
	f, ok := e.fdFlags[resolved]
	return f, ok
}
func (e *fakeEnv) Lstat(resolved string) (exists, isDir bool) {
	f, ok := e.files[resolved]
	return ok, ok && f.dir
}

func (e *fakeEnv) ReadArgBytes(arg int, addr uintptr, n int) ([]byte, error) {
	e.byteArgs = append(e.byteArgs, arg)
	return e.ReadBytes(addr, n)
}
func (e *fakeEnv) CopyMsg(hdr, name, ctl []byte, read []Span) { e.msgCopies++ }
func (e *fakeEnv) Frozen() bool                               { return e.frozen }
func (e *fakeEnv) ExitWritable(spans []Span) string {
	for _, s := range spans {
		if e.exitWritable.Overlaps(s) {
			return "an exit could write it"
		}
	}
	return ""
}
func (e *fakeEnv) Maps() ([]procfs.Mapping, error) { return e.maps, e.mapsErr }

func (e *fakeEnv) MapAt(addr uint64, named bool) (procfs.Mapping, bool, error) {
	if e.mapsErr != nil {
		return procfs.Mapping{}, false, e.mapsErr
	}
	m, ok := findMapping(e.maps, addr)
	if !named {
		m.Path = "" // as PROCMAP_QUERY answers without a name buffer
	}
	return m, ok, nil
}
func (e *fakeEnv) Loopback() bool           { return e.loopback }
func (e *fakeEnv) SendFrom(fd int32) string { e.fromAsked++; return e.from }

// LoopbackIf: interface 1 is lo, as on most hosts.
func (e *fakeEnv) LoopbackIf(index int32) bool { return index == 1 }

func (e *fakeEnv) AnonPage(addr uint64) bool { return e.anonPages[addr&^0xfff] }
func (e *fakeEnv) Tracing() bool             { return e.tracing }
func (e *fakeEnv) Tid() int                  { return 4321 }
func (e *fakeEnv) FutexRestart() uint64      { return e.futexRestart }

// pidfd is what a fake fd names as pidfd_send_signal's target.
type pidfd struct {
	pid   int
	errno syscall.Errno
	why   string
}

// at lays out strings and structs in fake memory from 0x1000 up.
const (
	addr1 = 0x1000
	addr2 = 0x2000
	addr3 = 0x3000
	bad   = 0xdead0000 // unmapped
)

// tcase is one row of a family's table.
type tcase struct {
	name string
	call string
	args [6]uint64
	// open adds ABI-dependent open flags to args[Spec.FlagsArg].
	open func(o syscalls.OpenFlagBits) uint64
	mem  map[uintptr]string
	// env changes the fake before the call.
	env func(e *fakeEnv)

	want    Verdict
	errno   syscall.Errno
	kind    syscalls.Kind // 0: no operation expected
	paths   []wantPath
	flags   string
	follows []bool // every Resolve's follow, when set
	check   func(t *testing.T, op *policy.Op, r *Result, e *fakeEnv)
}

// wantPath is what a decoded path must hold.
type wantPath struct {
	role, given, resolved string
	exists                bool
	dirfd                 int // -1: none
	base                  string
}

// run decodes every case on both ABIs.
func run(t *testing.T, cases []tcase) {
	t.Helper()
	for _, abi := range abis {
		for _, tc := range cases {
			t.Run(abi.tbl.ABI+"/"+tc.name, func(t *testing.T) {
				nr, ok := abi.tbl.Nr(tc.call)
				if !ok {
					t.Skipf("%s has no %s", abi.tbl.ABI, tc.call)
				}
				spec, ok := syscalls.Lookup(tc.call)
				if !ok {
					t.Fatalf("no spec for %s", tc.call)
				}
				regs := &arch.Regs{L: abi.l, W: make([]uint64, abi.l.Words)}
				regs.W[abi.l.NrWord] = uint64(nr)
				for i, v := range tc.args {
					regs.SetArg(i, v)
				}
				if tc.open != nil {
					regs.SetArg(spec.FlagsArg, tc.args[spec.FlagsArg]|tc.open(abi.tbl.Open))
				}
				e := newFakeEnv()
				for a, s := range tc.mem {
					e.mem[a] = []byte(s)
				}
				if tc.env != nil {
					tc.env(e)
				}
				var r Result
				d := New(Input{Name: abi.tbl.Name(regs.Nr()), Spec: spec, Regs: regs, Table: abi.tbl, Env: e}, &r)
				op, ok := d.Decode()
				if !ok {
					t.Fatalf("%s: handler %v not decoded here", tc.call, spec.Handler)
				}
				checkResult(t, tc, op, &r, e)
			})
		}
	}
}

func checkResult(t *testing.T, tc tcase, op *policy.Op, r *Result, e *fakeEnv) {
	t.Helper()
	if r.Out.Verdict != tc.want || r.Out.Failing() != tc.errno {
		t.Errorf("outcome %+v, want verdict %d errno %v", r.Out, tc.want, tc.errno)
	}
	if tc.kind == 0 {
		if op != nil {
			t.Errorf("op %+v, want none", op)
		}
	} else {
		if op == nil {
			t.Fatalf("no op, want kind %v", tc.kind)
		}
		if op.Kind != tc.kind || !strings.HasPrefix(op.Syscall, tc.call) {
			t.Errorf("op %v %s, want %v %s", op.Kind, op.Syscall, tc.kind, tc.call)
		}
		if tc.paths != nil {
			if len(op.Paths) != len(tc.paths) {
				t.Fatalf("paths %+v, want %d", op.Paths, len(tc.paths))
			}
			for i, w := range tc.paths {
				checkPath(t, op.Paths[i], w)
			}
		}
	}
	if tc.flags != "" && r.Flags != tc.flags {
		t.Errorf("flags %q, want %q", r.Flags, tc.flags)
	}
	if tc.follows != nil && !slices.Equal(e.follows, tc.follows) {
		t.Errorf("follows %v, want %v", e.follows, tc.follows)
	}
	if tc.check != nil {
		tc.check(t, op, r, e)
	}
}

func checkPath(t *testing.T, p policy.Path, w wantPath) {
	t.Helper()
	dirfd := -1
	if p.Dirfd != nil {
		dirfd = *p.Dirfd
	}
	if p.Role != w.role || p.Given != w.given || p.Resolved != w.resolved || p.Exists != w.exists || dirfd != w.dirfd || p.Base != w.base {
		t.Errorf("path {role %q given %q resolved %q exists %v dirfd %d base %q}, want %+v",
			p.Role, p.Given, p.Resolved, p.Exists, dirfd, p.Base, w)
	}
}

// atFdcwd is AT_FDCWD as a register holds an int argument.
const atFdcwd = uint64(uint32(0xffffff9c))

// errUnresolvable is a resolution error that is no errno: fail closed.
var errUnresolvable = errors.New("too many symlinks for tracecell")

// findMapping is the mapping of ms that holds addr.
func findMapping(ms []procfs.Mapping, addr uint64) (procfs.Mapping, bool) {
	for _, m := range ms {
		if addr >= m.Start && addr < m.End {
			return m, true
		}
	}
	return procfs.Mapping{}, false
}
