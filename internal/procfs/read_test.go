package procfs

import (
	"bytes"
	"os"
	"testing"
)

// TestRead checks the raw /proc reader against os.ReadFile, and that a
// short buffer cuts the file.
func TestRead(t *testing.T) {
	want, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		size int
		// whole: the file fits (its counters change between reads, so
		// only the fields that cannot are compared)
		whole bool
	}{{"whole", ReadMax, true}, {"cut", 16, false}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Read("/proc/self/status", make([]byte, tc.size))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) > tc.size || len(got) < 16 || !bytes.Equal(got[:16], want[:16]) {
				t.Errorf("Read = %q, want %d bytes at most, starting %q", got, tc.size, want[:16])
			}
			if tc.whole && StatusInt(got, "Tgid:", -1) != os.Getpid() {
				t.Errorf("Read: no Tgid %d in %q", os.Getpid(), got)
			}
		})
	}
	if _, err := Read("/proc/0/status", make([]byte, 64)); err == nil {
		t.Error("Read of a pid that cannot exist succeeded")
	}
}
