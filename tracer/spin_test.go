package tracer

import (
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
			if got := p.budget(1) > 0; got != tc.spins {
				t.Errorf("spins %v, want %v", got, tc.spins)
			}
		})
	}
}
