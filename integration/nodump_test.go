package integration

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestExecUnreadableProgram: an allowed program whose file the tree may
// not read (mode 0111) makes its process not dumpable at the exec
// (would_dump), and a tracer without CAP_SYS_PTRACE then can neither name
// what was loaded (/proc/<pid>/exe) nor read the process's fds and memory
// at its later calls. The build before this test let it run: the exec
// check compared the unreadable exe, "", with a non-script's interpreter,
// "" (red team, session 25, who raced an approved path to such a file).
// Now the process is killed at its exec event with the reason. A root
// tracecell (CAP_SYS_PTRACE, and root reads the file anyway) keeps
// following it, so there the program runs. The ground truth is the
// program's own output: it printed or it did not.
func TestExecUnreadableProgram(t *testing.T) {
	host, sbx := realDir(t), realDir(t)
	echo, err := os.ReadFile("/bin/echo")
	if err != nil {
		t.Skipf("no /bin/echo to copy: %v", err)
	}
	prog := filepath.Join(host, "xecho")
	if err := os.WriteFile(prog, echo, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(prog, 0o111); err != nil {
		t.Fatal(err)
	}
	env := runEnv(t, sbx)
	code := "import os; os.execv(" + pyQuote(prog) + ", ['xecho', 'RAN-UNREADABLE'])"
	bare := runBare(t, sbx, env, python, "-c", code)
	if !strings.Contains(bare.stdout, "RAN-UNREADABLE") {
		t.Skipf("the bare run does not run an execute-only program here: %d %q %q", bare.status, bare.stdout, bare.stderr)
	}
	r := runTraced(t, sbx, env, []string{"--allow-exec", prog}, python, "-c", code)
	if os.Geteuid() == 0 {
		if !strings.Contains(r.stdout, "RAN-UNREADABLE") || r.status != 0 {
			t.Fatalf("as root the allowed program must run: status %d stdout %q stderr %q\n%s", r.status, r.stdout, r.stderr, r.report.denialList())
		}
		return
	}
	if strings.Contains(r.stdout, "RAN-UNREADABLE") {
		t.Fatalf("ESCAPED: a program tracecell cannot follow ran: stdout %q\n%s", r.stdout, r.report.denialList())
	}
	if r.status != 128+9 {
		t.Errorf("status %d, want 137 (killed at its exec)", r.status)
	}
	found := false
	for _, e := range r.report.Denials {
		if e.Syscall == "execve" && e.Rule == "exec-mismatch" && strings.Contains(e.Reason, "not readable") &&
			len(e.Paths) == 1 && e.Paths[0].Given == prog {
			found = true
		}
	}
	if !found {
		t.Errorf("no exec-mismatch denial naming %s and why:\n%s", prog, r.report.denialList())
	}
}

// pyQuote is s as a Python string literal.
func pyQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// leaderGoneNetCode: the main thread exits (SYS_exit, this thread only)
// while a second thread sends a datagram from a socket bound to
// 127.0.0.1 to the port argv[1] and listens on an AF_UNIX socket bound in
// the sandbox argv[2]. /proc/<tgid>/net is gone once the leader has
// exited; the checks read the caller's /proc/<tgid>/task/<tid>/net.
const leaderGoneNetCode = `
import ctypes, errno, os, socket, sys, threading, time
libc = ctypes.CDLL(None, use_errno=True)
def work():
    time.sleep(0.2)
    for step, f in (("udp-send", udp), ("unix-listen", unx)):
        try:
            f(); res = "OK"
        except OSError as e:
            res = errno.errorcode[e.errno]
        print(step, res, flush=True)
    os._exit(0)
def udp():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        s.sendto(b"LEADER-GONE", ("127.0.0.1", int(sys.argv[1])))
def unx():
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.bind(sys.argv[2]); s.listen(1)
threading.Thread(target=work).start()
libc.syscall(60 if os.uname().machine == "x86_64" else 93, 0)
`

// TestLeaderGoneNetChecks (red team, session 25): with the thread group's
// leader gone, a send from a loopback-bound UDP socket and a listen on a
// bound AF_UNIX socket were denied with a false reason ("bound to
// ?(open /proc/N/net/udp: ...)"), since /proc/<tgid>/net no longer exists.
// Both must pass under --net loopback, and the datagram arrive.
func TestLeaderGoneNetChecks(t *testing.T) {
	sbx := realDir(t)
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	port := pc.LocalAddr().(*net.UDPAddr).Port
	got := make(chan string, 1)
	go func() {
		buf := make([]byte, 64)
		pc.SetReadDeadline(time.Now().Add(20 * time.Second))
		n, _, err := pc.ReadFrom(buf)
		if err != nil {
			got <- err.Error()
			return
		}
		got <- string(buf[:n])
	}()
	env := runEnv(t, sbx)
	r := runTraced(t, sbx, env, []string{"--net", "loopback"}, python, "-c", leaderGoneNetCode, strconv.Itoa(port), filepath.Join(sbx, "sock"))
	lines := attemptLines(r.stdout)
	if lines["udp-send"] != "OK" || lines["unix-listen"] != "OK" {
		t.Errorf("udp-send %q, unix-listen %q, want OK both\nstdout:\n%s\nstderr:\n%s\n%s", lines["udp-send"], lines["unix-listen"], r.stdout, r.stderr, r.report.denialList())
	}
	if len(r.report.Denials) != 0 {
		t.Errorf("denials:\n%s", r.report.denialList())
	}
	select {
	case s := <-got:
		if s != "LEADER-GONE" {
			t.Errorf("the listener got %q", s)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("no datagram arrived")
	}
}
