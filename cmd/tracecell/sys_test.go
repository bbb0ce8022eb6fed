package main

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestStatusKB(t *testing.T) {
	status := []byte("Name:\ttracecell\nVmPeak:\t 1250000 kB\nVmHWM:\t   11520 kB\nVmRSS:\t   11000 kB\n")
	for _, tc := range []struct {
		name, key string
		want      int64
	}{
		{"VmHWM", "VmHWM:", 11520},
		{"VmRSS", "VmRSS:", 11000},
		{"absent", "VmSwap:", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := statusKB(status, tc.key); got != tc.want {
				t.Errorf("statusKB(%q) = %d, want %d", tc.key, got, tc.want)
			}
		})
	}
}

// TestSelfMaxRSS: the peak is this process's own, never above what
// getrusage reports (which may add a launcher's peak, see selfMaxRSS).
func TestSelfMaxRSS(t *testing.T) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	got := selfMaxRSS()
	if got <= 0 || got > ru.Maxrss+1024 {
		t.Errorf("selfMaxRSS() = %d KiB, want in (0, %d]", got, ru.Maxrss+1024)
	}
}
