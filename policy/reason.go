package policy

import "syscall"

// FailClosed is the reason of a call tracecell refused because it could
// not check it (rule unresolvable-path: a path it could not resolve, a
// directory it could not verify, memory or an fd it could not read), as
// data: what it could not do, rendered for the mode by Text. In audit mode
// the call runs, so the reason says what enforce mode does instead of
// claiming a denial; the wording is rendering, never an edit of the prose.
type FailClosed struct {
	// Cause is what tracecell could not do and why, without the
	// consequence, e.g. "tracecell could not resolve the path (file name
	// too long)".
	Cause string
}

// The consequence of a FailClosed in each mode's words.
const (
	failClosedEnforce = ", so the call is denied to be safe"
	failClosedAudit   = ", which enforce mode denies to be safe"
)

// Text is the reason in the words of mode m, e.g. "tracecell could not
// resolve the path (file name too long), so the call is denied to be safe"
// in enforce mode.
func (f FailClosed) Text(m Mode) string {
	if m == Audit {
		return f.Cause + failClosedAudit
	}
	return f.Cause + failClosedEnforce
}

// Decision is the denial of the call with errno, in enforce mode's words
// (the tracer records an audit with Text(Audit) instead).
func (f FailClosed) Decision(errno syscall.Errno) Decision {
	return Decision{Rule: RuleUnresolvablePath, Reason: f.Text(Enforce), Errno: errno}
}
