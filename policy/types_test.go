package policy

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPathKeepsBytes: a path that is not valid UTF-8 keeps its exact bytes
// through a report's JSON, and a valid one gets no extra fields.
func TestPathKeepsBytes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		p     Path
		extra bool
	}{
		{"invalid", Path{Role: "path", Given: "a/\xff\xfe", Base: "/srv/\xc3", Resolved: "/srv/\xc3/a/\xff\xfe"}, true},
		{"valid", Path{Role: "path", Given: "a/é", Resolved: "/srv/a/é"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.p
			if got := p.KeepBytes(); got != tc.extra {
				t.Errorf("KeepBytes() = %v, want %v", got, tc.extra)
			}
			b, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), "_base64") != tc.extra {
				t.Errorf("JSON %s: base64 fields present %v, want %v", b, !tc.extra, tc.extra)
			}
			var back Path
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if back.Given != tc.p.Given || back.Base != tc.p.Base || back.Resolved != tc.p.Resolved {
				t.Errorf("read back %q %q %q, want %q %q %q", back.Given, back.Base, back.Resolved, tc.p.Given, tc.p.Base, tc.p.Resolved)
			}
		})
	}
}
