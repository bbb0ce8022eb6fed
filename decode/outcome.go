package decode

import (
	"syscall"

	"github.com/tracecell/tracecell/policy"
)

// Verdict is what decoding says is to be done with a call, besides the
// operation it hands to the policy.
type Verdict uint8

const (
	// Decide: the policy decides the operation (the zero Outcome).
	Decide Verdict = iota
	// Pass: a harmless form of a trapped call, allowed without asking the
	// policy.
	Pass
	// KernelFails: the kernel would fail the call the same way before
	// touching anything (a bad pointer, fd or path): failed with Errno,
	// not a denial, nothing reported.
	KernelFails
	// FailClosed: tracecell's own denial, with Errno, of a call it cannot
	// check (a path it could not resolve): reported, with Why and Path.
	FailClosed
	// Limit: a denial the tracer decides itself (max-procs, the path
	// page's range), Decision.
	Limit
)

// Outcome is the one result of decoding a call besides its operation; the
// zero value is Decide.
type Outcome struct {
	// Verdict says which of the fields below apply.
	Verdict Verdict
	// Errno fails the call (KernelFails, FailClosed).
	Errno syscall.Errno
	// Why is the reason of a FailClosed denial, as reported.
	Why string
	// Path is what a FailClosed call named, reported when its operation
	// has no paths.
	Path policy.Path
	// Decision is a Limit's denial.
	Decision *policy.Decision
}

// PassOutcome allows the call without a decision.
func PassOutcome() Outcome { return Outcome{Verdict: Pass} }

// KernelFailsWith fails the call with e, as the kernel would.
func KernelFailsWith(e syscall.Errno) Outcome { return Outcome{Verdict: KernelFails, Errno: e} }

// FailClosedWith denies the call with e, reported with why and path.
func FailClosedWith(e syscall.Errno, why string, path policy.Path) Outcome {
	return Outcome{Verdict: FailClosed, Errno: e, Why: why, Path: path}
}

// LimitWith denies the call with the tracer's own decision d.
func LimitWith(d policy.Decision) Outcome { return Outcome{Verdict: Limit, Decision: &d} }

// Fails reports whether the call fails without a decision (KernelFails or
// FailClosed).
func (o Outcome) Fails() bool {
	return (o.Verdict == KernelFails || o.Verdict == FailClosed) && o.Errno != 0
}

// Failing returns the errno the call fails with, 0 when it does not fail.
func (o Outcome) Failing() syscall.Errno {
	if o.Fails() {
		return o.Errno
	}
	return 0
}
