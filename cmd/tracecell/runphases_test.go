package main

import (
	"encoding/json"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/config"
	"github.com/tracecell/tracecell/tracer"
)

// TestPlanReportLimits: the report's "limits" (the JSON operators and the
// Python client read) appear only when a limit is set, in this shape.
func TestPlanReportLimits(t *testing.T) {
	for _, tc := range []struct {
		name string
		plan config.Plan
		want string // the limits as JSON; "null" for none
	}{
		{"none", config.Plan{}, "null"},
		{"timeout", config.Plan{Timeout: 90 * time.Second}, `{"max_procs":0,"rlimits":null,"timeout_seconds":90}`},
		{"max-procs", config.Plan{MaxProcs: 8}, `{"max_procs":8,"rlimits":null,"timeout_seconds":0}`},
		{"rlimits", config.Plan{Rlimits: []tracer.Rlimit{
			{Name: "cpu_seconds", Resource: unix.RLIMIT_CPU, Cur: 2, Max: 3},
			{Name: "open_files", Resource: unix.RLIMIT_NOFILE, Cur: 64, Max: 64},
		}}, `{"max_procs":0,"rlimits":[{"name":"cpu_seconds","cur":2,"max":3},{"name":"open_files","cur":64,"max":64}],"timeout_seconds":0}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := planReport(&tc.plan, []string{"true"}, time.Now())
			b, err := json.Marshal(rep.Limits)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Errorf("limits %s, want %s", b, tc.want)
			}
		})
	}
}

// TestRecordOutcome: how a run ended becomes tracecell's exit status and
// the report's exit (the statuses README's "Exit status" promises).
func TestRecordOutcome(t *testing.T) {
	for _, tc := range []struct {
		name       string
		res        *tracer.Result
		runErr     error
		sig        syscall.Signal // the signal tracecell received
		wantStatus int
		wantSignal string // rep.Exit.Signal
		wantError  bool   // rep.Error set
	}{
		{"exit-0", &tracer.Result{}, nil, 0, 0, "", false},
		{"exit-3", &tracer.Result{ExitCode: 3}, nil, 0, 3, "", false},
		{"killed", &tracer.Result{ExitCode: -1, Signal: syscall.SIGKILL}, nil, 0, 128 + 9, "SIGKILL", false},
		{"timeout", &tracer.Result{ExitCode: -1, Signal: syscall.SIGKILL, TimedOut: true}, nil, 0, statusTimeout, "SIGKILL", false},
		{"interrupted", &tracer.Result{ExitCode: -1, Signal: syscall.SIGKILL, Interrupted: true}, nil, syscall.SIGTERM, 128 + 15, "SIGKILL", true},
		{"interrupted-no-signal", &tracer.Result{ExitCode: -1, Signal: syscall.SIGKILL, Interrupted: true}, nil, 0, 128 + 9, "SIGKILL", false},
		{"start-error", nil, &tracer.StartError{Status: statusNotExecutable, Err: errors.New("exec")}, 0, statusNotExecutable, "", true},
		{"tracer-error", nil, errors.New("ptrace"), 0, statusFailed, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := &config.Plan{}
			rep := planReport(plan, []string{"true"}, time.Now())
			sigs := &signalWatch{got: tc.sig}
			status := recordOutcome(rep, plan, tc.res, tc.runErr, sigs, zerolog.Nop())
			if status != tc.wantStatus || rep.Exit.Status != tc.wantStatus {
				t.Errorf("status %d, report's %d, want %d", status, rep.Exit.Status, tc.wantStatus)
			}
			if rep.Exit.Signal != tc.wantSignal || (rep.Error != "") != tc.wantError {
				t.Errorf("report exit %+v error %q, want signal %q, error %v", rep.Exit, rep.Error, tc.wantSignal, tc.wantError)
			}
		})
	}
}
