// Package decode is the tracer's decode stage: it turns a stopped syscall
// (its registers, the memory its arguments point to, the paths they name
// and what the traced tree holds) into the operation the policy decides,
// plus one Outcome (decide, pass, fail as the kernel would, fail closed,
// the tracer's own limit). It never traces: every fact about the stopped
// task comes through the Env interface, so its tables run in go test on
// both ABIs without a child process. It never decides either: choosing
// among several operations is policy's (policy.Worst).
package decode
