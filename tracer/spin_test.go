package tracer

import (
	"os"
	"strconv"
	"testing"
	"time"
)

func TestSpinBudget(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		misses, running, cpus int
		want                  time.Duration
	}{
		{"one task, 2 CPUs, stops caught", 0, 1, 2, spinFor},
		{"one task, one miss", 1, 1, 2, spinFor},
		{"one task, misses in a row", spinMissLimit, 1, 2, 0},
		{"as many tasks as CPUs", 0, 2, 2, 0},
		{"more tasks than CPUs", 0, 8, 2, 0},
		{"8 tasks, 16 CPUs", 0, 8, 16, spinFor},
		{"one CPU: the tree needs it", 0, 1, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := spinBudget(tc.misses, tc.running, tc.cpus); got != tc.want {
				t.Errorf("spinBudget(%d, %d, %d) = %v, want %v", tc.misses, tc.running, tc.cpus, got, tc.want)
			}
		})
	}
}

// TestSpinPolicyObserve: the spin goes off after spinMissLimit slow stops
// in a row and comes back with the first quick one.
func TestSpinPolicyObserve(t *testing.T) {
	quick, slow := spinFor/10, 4*spinFor
	for _, tc := range []struct {
		name   string
		waits  []time.Duration
		spins  bool
		misses int
	}{
		{"none yet", nil, true, 0},
		{"quick stops", []time.Duration{quick, quick, spinFor}, true, 0},
		{"one slow stop", []time.Duration{quick, slow}, true, 1},
		{"slow stops in a row", []time.Duration{slow, slow}, false, spinMissLimit},
		{"many slow stops", []time.Duration{slow, slow, slow, slow, slow}, false, spinMissLimit},
		{"slow, then quick", []time.Duration{slow, slow, slow, quick}, true, 0},
		{"alternating", []time.Duration{slow, quick, slow, quick, slow}, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := spinPolicy{cpus: 2}
			for _, w := range tc.waits {
				p.observe(w)
			}
			if p.misses != tc.misses {
				t.Errorf("misses %d, want %d", p.misses, tc.misses)
			}
			p.sample = func() int { return 2 }
			if got := p.budget(1, time.Now()) > 0; got != tc.spins {
				t.Errorf("spins %v, want %v", got, tc.spins)
			}
		})
	}
}

func TestLoadavgRunning(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       int
	}{
		{"linux", "0.52 0.58 0.59 3/467 12345\n", 3},
		{"busy", "9.10 6.20 5.00 17/1024 999\n", 17},
		{"empty", "", -1},
		{"no slash", "0.52 0.58 0.59 3 12345\n", -1},
		{"not a number", "0.52 0.58 0.59 x/467 12345\n", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := loadavgRunning([]byte(tc.text)); got != tc.want {
				t.Errorf("loadavgRunning(%q) = %d, want %d", tc.text, got, tc.want)
			}
		})
	}
	if n := machineRunning(); n < 1 {
		t.Errorf("machineRunning() = %d: this test runs, so at least 1", n)
	}
}

// TestSpinPolicyRunning: the tree's tasks count as running up to what the
// machine runs besides the tracer, taken again every spinRecount; the
// tree's count alone when the machine cannot say.
func TestSpinPolicyRunning(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name    string
		tasks   int
		machine int // machineRunning, the tracer included; -1: unreadable
		spins   bool
	}{
		{"one task, idle machine", 1, 2, true},
		{"one task, busy machine", 1, 9, true},
		{"8 threads waiting for the GIL", 8, 2, true},
		{"8 threads running", 8, 9, false},
		{"2 tasks, loadavg unreadable", 2, -1, false},
		{"1 task, loadavg unreadable", 1, -1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := spinPolicy{cpus: 2, sample: func() int { return tc.machine }}
			if got := p.budget(tc.tasks, now) > 0; got != tc.spins {
				t.Errorf("spins %v, want %v (running %d)", got, tc.spins, p.running)
			}
		})
	}
	calls := 0
	p := spinPolicy{cpus: 2, sample: func() int { calls++; return 2 }}
	for _, d := range []time.Duration{0, spinRecount / 2, spinRecount, spinRecount + 1} {
		p.budget(8, now.Add(d))
	}
	if calls != 2 {
		t.Errorf("%d loadavg reads in 1 ms + 1 ns, want 2 (every spinRecount)", calls)
	}
}

// TestMachineRunning reads the live /proc/loadavg through the descriptor
// kept open: the same one every time, the file named, and a count of at
// least the reader itself.
func TestMachineRunning(t *testing.T) {
	fd := loadavgFD()
	if fd < 0 {
		t.Fatal("cannot open /proc/loadavg")
	}
	if again := loadavgFD(); again != fd {
		t.Fatalf("loadavgFD opened a second descriptor: %d, then %d", fd, again)
	}
	if target, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd)); err != nil || target != "/proc/loadavg" {
		t.Fatalf("fd %d is %q (%v), want /proc/loadavg", fd, target, err)
	}
	for i := 0; i < 3; i++ { // pread at 0 formats the file again each time
		if n := machineRunning(); n < 1 {
			t.Fatalf("read %d: machineRunning() = %d, want at least 1 (the reader)", i, n)
		}
	}
}
