package caps

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in      []string
		want    Set
		wantErr string
	}{
		{nil, 0, ""},
		{[]string{"net_raw"}, 1 << NetRaw, ""},
		{[]string{"CAP_NET_ADMIN", "cap_sys_admin"}, 1<<NetAdmin | 1<<SysAdmin, ""},
		{[]string{" Net_Raw "}, 1 << NetRaw, ""},
		{[]string{"checkpoint_restore"}, 1 << 40, ""},
		{[]string{"all"}, All, ""},
		{[]string{"none"}, 0, ""},
		{[]string{"net_raw", "bogus"}, 0, `unknown capability "bogus"`},
		{[]string{"CAP_"}, 0, `unknown capability "CAP_"`},
		{[]string{""}, 0, `unknown capability ""`},
	} {
		t.Run(strings.Join(tc.in, ","), func(t *testing.T) {
			got, err := Parse(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse(%q) = %v, %v; want error %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Parse(%q) = %#x, %v; want %#x", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestNames(t *testing.T) {
	if got := DefaultKeep.String(); got != "chown,dac_override,dac_read_search,fowner,fsetid,kill,net_bind_service" {
		t.Errorf("DefaultKeep = %s", got)
	}
	if got := Set(0).String(); got != "none" {
		t.Errorf("empty = %s", got)
	}
	if got := (Set(1)<<41 | 1<<NetRaw).String(); got != "net_raw,cap_41" {
		t.Errorf("unnamed = %s", got)
	}
	// Every name parses back to its number.
	for c := 0; c < len(names); c++ {
		if s, err := Parse([]string{Name(c)}); err != nil || s != 1<<uint(c) {
			t.Errorf("Parse(%s) = %#x, %v", Name(c), s, err)
		}
	}
	if b, _ := (Set(1) << Kill).MarshalText(); string(b) != "kill" {
		t.Errorf("MarshalText = %s", b)
	}
}

func TestPlan(t *testing.T) {
	full := Set(1)<<41 - 1
	for _, tc := range []struct {
		name string
		st   State
		keep Set
		want Drop
	}{
		{"unprivileged user", State{Last: 40}, DefaultKeep, Drop{}},
		{"root", State{Effective: full, Permitted: full, Bounding: full, Root: true, Last: 40}, DefaultKeep,
			Drop{Bounding: full &^ DefaultKeep, Effective: DefaultKeep, Permitted: DefaultKeep,
				Dropped: full &^ DefaultKeep, Kept: DefaultKeep}},
		// An older kernel: capabilities it does not know are not in the
		// bounding set and are not dropped from it.
		{"root, kernel knows 0..37", State{Effective: full >> 3, Permitted: full >> 3, Bounding: full >> 3, Root: true, Last: 37}, DefaultKeep,
			Drop{Bounding: full >> 3 &^ DefaultKeep, Effective: DefaultKeep, Permitted: DefaultKeep,
				Dropped: full >> 3 &^ DefaultKeep, Kept: DefaultKeep}},
		{"root keeps all", State{Effective: full, Permitted: full, Bounding: full, Root: true, Last: 40}, All,
			Drop{Effective: full, Permitted: full, Kept: full}},
		// A user with file capabilities on tracecell: no bounding set
		// change needed (an exec by a non-root user gets nothing from it).
		{"user with net_raw, net_admin", State{Effective: 1<<NetRaw | 1<<NetAdmin, Permitted: 1<<NetRaw | 1<<NetAdmin, Bounding: full, Last: 40},
			DefaultKeep | 1<<NetRaw,
			Drop{Effective: 1 << NetRaw, Permitted: 1 << NetRaw, Dropped: 1 << NetAdmin, Kept: 1 << NetRaw}},
		{"inheritable and ambient", State{Permitted: 1 << NetAdmin, Inheritable: 1<<NetAdmin | 1<<Chown, Last: 40}, DefaultKeep,
			Drop{Inheritable: 1 << Chown, Dropped: 1 << NetAdmin}},
		{"root, setpcap permitted only", State{Effective: DefaultKeep, Permitted: full, Bounding: full, Root: true, Last: 40}, DefaultKeep,
			Drop{Bounding: full &^ DefaultKeep, Effective: DefaultKeep, Permitted: DefaultKeep,
				Dropped: full &^ DefaultKeep, Kept: DefaultKeep, RaiseSetpcap: true,
				Raise: data(DefaultKeep|1<<Setpcap, full, 0)}},
		{"root without setpcap", State{Effective: DefaultKeep | 1<<SysAdmin, Permitted: DefaultKeep | 1<<SysAdmin, Bounding: full, Root: true, Last: 40}, DefaultKeep,
			Drop{Bounding: full &^ DefaultKeep, Effective: DefaultKeep, Permitted: DefaultKeep,
				Dropped: full &^ DefaultKeep, Kept: DefaultKeep, NoSetpcap: true,
				Raise: data(DefaultKeep|1<<SysAdmin|1<<Setpcap, DefaultKeep|1<<SysAdmin, 0)}},
		{"root, bounding already small", State{Effective: DefaultKeep, Permitted: DefaultKeep, Bounding: DefaultKeep, Root: true, Last: 40}, DefaultKeep,
			Drop{Effective: DefaultKeep, Permitted: DefaultKeep, Kept: DefaultKeep}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.st.Plan(tc.keep)
			if got != tc.want {
				t.Errorf("Plan:\n got %+v\nwant %+v", got, tc.want)
			}
			if got.Needed() != (tc.want.Dropped != 0) {
				t.Errorf("Needed = %v", got.Needed())
			}
		})
	}
}

func TestData(t *testing.T) {
	d := Drop{Effective: 1<<40 | 1<<Chown, Permitted: 1<<40 | 1<<Kill, Inheritable: 1 << 33}
	want := [2]unix.CapUserData{{Effective: 1, Permitted: 1 << Kill}, {Effective: 1 << 8, Permitted: 1 << 8, Inheritable: 1 << 1}}
	if got := d.Data(); got != want {
		t.Errorf("Data = %+v, want %+v", got, want)
	}
}

// TestCurrent reads this process's sets; they must agree with what
// /proc/self/status shows.
func TestCurrent(t *testing.T) {
	st, err := Current()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	status := map[string]Set{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		if n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64); err == nil && strings.HasPrefix(k, "Cap") {
			status[k] = Set(n)
		}
	}
	for _, c := range []struct {
		key string
		got Set
	}{{"CapEff", st.Effective}, {"CapPrm", st.Permitted}, {"CapInh", st.Inheritable}} {
		if c.got != status[c.key] {
			t.Errorf("%s: capget %#x, /proc/self/status %#x", c.key, c.got, status[c.key])
		}
	}
	if st.Root && st.Bounding != status["CapBnd"] {
		t.Errorf("CapBnd: read %#x, /proc/self/status %#x", st.Bounding, status["CapBnd"])
	}
	if st.Last < 36 || st.Last > 63 {
		t.Errorf("cap_last_cap = %d", st.Last)
	}
}
