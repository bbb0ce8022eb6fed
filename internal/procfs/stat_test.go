package procfs

import (
	"os"
	"syscall"
	"testing"
)

func TestParseStat(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     Stat
		ok       bool
	}{
		{"plain", "42 (sleep) S 1 42 42 0 -1", Stat{42, 'S', 1, 42}, true},
		{"parentheses and a space in the name", "7 (a) (b c) Z 3 5 5 0", Stat{7, 'Z', 3, 5}, true},
		{"a name that looks like fields", "9 (x) R 1 2) S 4 9 9 0", Stat{9, 'S', 4, 9}, true},
		{"a name of only ')'", "11 ()) t 2 11 11", Stat{11, 't', 2, 11}, true},
		{"an empty name", "12 () D 1 12 12", Stat{12, 'D', 1, 12}, true},
		{"fields missing", "7 (x) Z", Stat{}, false},
		{"a state of two letters", "7 (x) ZZ 1 7", Stat{}, false},
		{"no pid", "(x) S 1 2 3", Stat{}, false},
		{"a pid that is no number", "x7 (x) S 1 2 3", Stat{}, false},
		{"a ppid that is no number", "7 (x) S one 2 3", Stat{}, false},
		{"no name", "7 S 1 2 3", Stat{}, false},
		{"garbage", "garbage", Stat{}, false},
		{"empty", "", Stat{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := ParseStat([]byte(c.in))
			if ok != c.ok || (ok && got != c.want) {
				t.Errorf("%q: %+v %v, want %+v %v", c.in, got, ok, c.want, c.ok)
			}
		})
	}
	st, ok := ReadStat(os.Getpid())
	if !ok || st.Pid != os.Getpid() || st.Ppid != os.Getppid() || st.Pgrp != syscall.Getpgrp() {
		t.Errorf("own stat %+v %v", st, ok)
	}
}

func TestStateOf(t *testing.T) {
	cases := []struct {
		name, line string
		want       byte
	}{
		{"running", "42 (python3) R 1 42 42 0", 'R'},
		{"tracing stop", "42 (python3) t 1 42", 't'},
		{"parenthesis in the name", "42 (a) S (b)) D 1 42", 'D'},
		{"a space and ') ' in the name", "42 (a ) Z b) S 1 42", 'S'},
		{"zombie", "42 (x) Z 1", 'Z'},
		{"truncated", "42 (x)", 0},
		{"garbage", "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := StateOf([]byte(c.line)); got != c.want {
				t.Errorf("StateOf(%q) = %q, want %q", c.line, got, c.want)
			}
		})
	}
	if st := StateLetter(os.Getpid()); st != 'R' && st != 'S' {
		t.Errorf("StateLetter(self) = %q", st)
	}
	if st := StateLetter(-1); st != 0 {
		t.Errorf("StateLetter(-1) = %q, want 0", st)
	}
}

func TestFieldOf(t *testing.T) {
	line := []byte("42 (a ) b) S 7 42 42")
	for _, c := range []struct {
		n    int
		want string
	}{{3, "S"}, {4, "7"}, {6, "42"}, {7, ""}, {2, ""}, {1, ""}} {
		if got := FieldOf(line, c.n); got != c.want {
			t.Errorf("FieldOf(%d) = %q, want %q", c.n, got, c.want)
		}
	}
	if FieldOf([]byte("no parenthesis 1 2 3"), 3) != "" {
		t.Error("a field of a text without a command name")
	}
}
