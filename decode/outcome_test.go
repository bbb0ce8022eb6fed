package decode

import (
	"syscall"
	"testing"

	"github.com/tracecell/tracecell/policy"
)

func TestOutcome(t *testing.T) {
	for _, tc := range []struct {
		name    string
		out     Outcome
		verdict Verdict
		failing syscall.Errno
	}{
		{"zero decides", Outcome{}, Decide, 0},
		{"pass", PassOutcome(), Pass, 0},
		{"kernel fails", KernelFailsWith(syscall.EFAULT), KernelFails, syscall.EFAULT},
		{"kernel fails with no errno fails nothing", KernelFailsWith(0), KernelFails, 0},
		{"fail closed", FailClosedWith(syscall.EACCES, "why", policy.Path{Given: "x"}), FailClosed, syscall.EACCES},
		{"limit", LimitWith(policy.Decision{Rule: "max-procs", Errno: syscall.EAGAIN}), Limit, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.out.Verdict != tc.verdict {
				t.Errorf("verdict %d, want %d", tc.out.Verdict, tc.verdict)
			}
			if got := tc.out.Failing(); got != tc.failing {
				t.Errorf("Failing() = %v, want %v", got, tc.failing)
			}
			if tc.out.Fails() != (tc.failing != 0) {
				t.Errorf("Fails() = %v", tc.out.Fails())
			}
		})
	}
	if d := LimitWith(policy.Decision{Rule: "max-procs"}); d.Decision == nil || d.Decision.Rule != "max-procs" {
		t.Errorf("LimitWith lost its decision: %+v", d)
	}
}
