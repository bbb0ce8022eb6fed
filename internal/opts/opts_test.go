package opts

import (
	"testing"
	"time"
)

func TestPositive(t *testing.T) {
	for _, tc := range []struct{ in, want int }{{0, 7}, {-3, 7}, {1, 1}, {9, 9}} {
		v := tc.in
		Positive(&v, 7)
		if v != tc.want {
			t.Errorf("Positive(%d, 7) = %d, want %d", tc.in, v, tc.want)
		}
	}
	d := time.Duration(0)
	Positive(&d, time.Second)
	if d != time.Second {
		t.Errorf("duration: %v", d)
	}
}
