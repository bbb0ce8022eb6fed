package tracer

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestLedgerTerminal: a terminal /dev/tty stands for is named and judged
// by its device number as a pty slave by name is: tracecell's own terminal
// (the command's stdio, or what a /dev/tty among it refers to) and a pty
// the tree made are the tree's; another pty, a pty number whose /dev/pts
// entry is another device, and a console not among the stdio are not.
func TestLedgerTerminal(t *testing.T) {
	_, slave := hostTerminal(t)
	other, otherName := hostPty(t)
	var st, ost unix.Stat_t
	if err := unix.Fstat(int(slave.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	if err := unix.Stat(otherName, &ost); err != nil {
		t.Fatal(err)
	}
	name := "/dev/pts/" + strconv.FormatUint(uint64(unix.Minor(st.Rdev)), 10)

	l := newPtyLedger()
	if p, own := l.terminal(st.Rdev); p != name || own {
		t.Errorf("a host's pty: %s own %v, want %s not own", p, own, name)
	}
	l.addStdio([]*os.File{slave})
	if p, own := l.terminal(st.Rdev); p != name || !own {
		t.Errorf("tracecell's own terminal: %s own %v", p, own)
	}
	if p, own := l.terminal(ost.Rdev); p != otherName || own {
		t.Errorf("another pty: %s own %v", p, own)
	}
	// A pty of the tree's (as learn records it), then one whose index
	// passed to another pty: not the tree's.
	n := uint32(unix.Minor(ost.Rdev))
	id, ok := ptyStat(otherName)
	if !ok {
		t.Fatal("ptyStat")
	}
	l.own[n] = id
	if _, own := l.terminal(ost.Rdev); !own {
		t.Error("the tree's own pty is not its own")
	}
	l.own[n] = ptyID{id.dev, id.rdev, unix.Timespec{Sec: 1}}
	if _, own := l.terminal(ost.Rdev); own {
		t.Error("an index reused by another pty taken for the tree's")
	}
	other.Close()
	// A pty number with no /dev/pts entry (another devpts instance's).
	if p, own := l.terminal(unix.Mkdev(136, 1<<19)); own || p != "/dev/pts/524288" {
		t.Errorf("a pty not at /dev/pts: %s own %v", p, own)
	}
	// A virtual console: tracecell's own only when among its stdio, or
	// what a /dev/tty among it refers to.
	tty2 := unix.Mkdev(4, 2)
	if _, own := l.terminal(tty2); own {
		t.Error("a console not among the stdio is own")
	}
	l.viaDevTTY = append(l.viaDevTTY, tty2)
	if _, own := l.terminal(tty2); !own {
		t.Error("the console a stdio /dev/tty refers to is not own")
	}
	l.ttys = append(l.ttys, devID{6, unix.Mkdev(4, 3)})
	if _, own := l.terminal(unix.Mkdev(4, 3)); !own {
		t.Error("a console among the stdio is not own")
	}
}

// TestCttyNr: field 7 of /proc/<pid>/stat. A process given a terminal as
// its controlling one (a child in a session of its own, TIOCSCTTY) shows
// that terminal's device number, as fstat gives it; no process, no answer.
func TestCttyNr(t *testing.T) {
	_, slave := hostTerminal(t)
	var st unix.Stat_t
	if err := unix.Fstat(int(slave.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", "read x")
	cmd.Stdin = slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start a session: %v", err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var nr uint64
	for i := 0; i < 200; i++ {
		var ok bool
		if nr, ok = cttyNr(cmd.Process.Pid); ok && nr != 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if nr != st.Rdev {
		t.Errorf("tty_nr %#x, want the slave's %#x", nr, st.Rdev)
	}
	if _, ok := cttyNr(1 << 30); ok {
		t.Error("tty_nr of no process")
	}
}
