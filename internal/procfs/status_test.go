package procfs

import "testing"

func TestStatus(t *testing.T) {
	b := []byte("Name:\tpython3 x\nTgid:\t42\nPid:\t43\nSeccomp_filters:\t2\nflags:\t02100002\nBad:\tx\nPid:\t44\n")
	for _, c := range []struct {
		key  string
		def  int
		want int
	}{
		{"Tgid:", 0, 42},
		{"Pid:", 0, 43}, // the first line with the key
		{"Seccomp_filters:", -1, 2},
		{"Bad:", -2, -2}, // no number: the default
		{"Missing:", 7, 7},
		{"Name:", -1, -1},
	} {
		t.Run(c.key, func(t *testing.T) {
			if got := StatusInt(b, c.key, c.def); got != c.want {
				t.Errorf("StatusInt(%q) = %d, want %d", c.key, got, c.want)
			}
		})
	}
	if got := StatusField(b, "flags:"); got != "\t02100002" {
		t.Errorf("StatusField(flags:) = %q", got)
	}
	if got := StatusField(b, "Name:"); got != "\tpython3 x" {
		t.Errorf("StatusField(Name:) = %q", got)
	}
	if got := StatusField(b, "Nope:"); got != "" {
		t.Errorf("StatusField(Nope:) = %q", got)
	}
}
