package server

import (
	"strings"
	"testing"
)

func TestValidID(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want bool
	}{
		{"agent-1", true},
		{"A.b_c-9", true},
		{"...", true},
		{strings.Repeat("x", 128), true},
		{strings.Repeat("x", 129), false},
		{"", false},
		{".", false},
		{"..", false},
		{"a/b", false},
		{"a b", false},
		{"é", false},
		{"a\x00", false},
		{"a:b", false},
	} {
		t.Run(tc.id, func(t *testing.T) {
			if got := validID(tc.id); got != tc.want {
				t.Errorf("validID(%q) = %v, want %v", tc.id, got, tc.want)
			}
		})
	}
}
