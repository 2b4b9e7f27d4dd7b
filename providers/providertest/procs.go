// Processes: what an e2e test checks to prove an agent CLI left nothing
// running behind its run (the process group killed after an exit or a
// cancel).

package providertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// OrphanMarker returns a word unique to this test process and name, to put
// in the command line of a process a scripted tool call leaves behind
// (`sh -c 'sleep 300; : MARKER'`), so that Procs finds it and nothing else.
func OrphanMarker(name string) string {
	return fmt.Sprintf("tl-orphan-%d-%s", os.Getpid(), name)
}

// Procs returns the live processes (zombies excluded) whose command line
// contains marker, as "pid (ppid P, group G, session S): command line".
func Procs(marker string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		cmd, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil || !strings.Contains(string(cmd), marker) {
			continue
		}
		// "pid (comm) S ppid pgrp session ...": the fields after the last ')'.
		var state, ppid, pgrp, sid string
		if st, err := os.ReadFile(filepath.Join(dir, "stat")); err == nil {
			if i := strings.LastIndexByte(string(st), ')'); i >= 0 {
				if f := strings.Fields(string(st[i+1:])); len(f) >= 4 {
					state, ppid, pgrp, sid = f[0], f[1], f[2], f[3]
				}
			}
		}
		if state == "Z" {
			continue
		}
		out = append(out, fmt.Sprintf("%d (ppid %s, group %s, session %s): %s", pid, ppid, pgrp, sid,
			strings.ReplaceAll(strings.TrimRight(string(cmd), "\x00"), "\x00", " ")))
	}
	return out
}

// NoOrphans fails t when a process holding marker is still alive once the
// kill that ended a run had time to land (Scale(5 s), polling), and kills
// the survivors so they do not outlive the test.
func NoOrphans(t testing.TB, marker string) {
	t.Helper()
	deadline := time.Now().Add(Scale(5 * time.Second))
	for {
		left := Procs(marker)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, p := range left {
				if pid, err := strconv.Atoi(strings.Fields(p)[0]); err == nil {
					if proc, err := os.FindProcess(pid); err == nil {
						_ = proc.Kill()
					}
				}
			}
			t.Errorf("processes outlived the run: %q", left)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WaitFile waits until path exists (a scripted tool call got as far as
// writing it), up to Scale(RunIdle); it reports whether it appeared.
func WaitFile(path string, stop <-chan struct{}) bool {
	deadline := time.NewTimer(Scale(RunIdle))
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(path); err == nil {
			return true
		}
		select {
		case <-tick.C:
		case <-stop:
			return false
		case <-deadline.C:
			return false
		}
	}
}

// RunCancelledOnFile runs one turn of p (sandboxed as Run's) and cancels it
// once path exists (a scripted tool call is under way): for CLIs that print
// nothing before the end of their turn, whose cancel cannot wait on an
// event. The turn is not
// cancelled if path never appears within Scale(RunIdle). It also returns how
// long Run took to return after the cancel (0 when it was not cancelled).
func RunCancelledOnFile(t testing.TB, p Runner, req agent.RunRequest, path string) (*Result, time.Duration) {
	t.Helper()
	req = withIDs(t, req)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx, req = Confine(t, ctx, req)
	cancelled := make(chan time.Time, 1)
	go func() {
		if WaitFile(path, ctx.Done()) {
			cancelled <- time.Now()
			cancel()
		}
	}()
	res := &Result{}
	start := time.Now()
	res.Err = p.Run(ctx, req, func(ev agent.Event) { res.Events = append(res.Events, ev) })
	res.Elapsed = time.Since(start)
	select {
	case at := <-cancelled:
		took := time.Since(at)
		t.Logf("Run(%q) cancelled when %s appeared; it returned %v %s later", req.Prompt, filepath.Base(path), res.Err, took.Round(time.Millisecond))
		return res, took
	default:
		t.Logf("Run(%q) = %v in %s, never cancelled (%s did not appear)", req.Prompt, res.Err, res.Elapsed.Round(time.Millisecond), filepath.Base(path))
		return res, 0
	}
}

// LeftBehind is a shell command that leaves a process holding marker in the
// background (in the CLI's process group, output detached), for a tool call
// whose run must not end with it still alive (see NoOrphans).
func LeftBehind(marker string) string {
	return "(sh -c 'sleep 300; : " + marker + "' >/dev/null 2>&1 &)"
}

// Holding is a shell command that writes the file started in the tool's
// working directory, then holds the tool call with a process holding marker:
// the turn to cancel in CheckCancelled.
func Holding(started, marker string) string {
	return "echo started > " + started + "; sh -c 'sleep 120; : " + marker + "'"
}

// CheckCancelled runs one turn of p whose scripted tool call runs
// Holding(filepath.Base(started), marker), cancels it once started exists,
// and checks that the run ended with run.interrupted, that Run returned nil
// within Scale(limit) of the cancel, and that no process holding marker is
// left.
func CheckCancelled(t testing.TB, p Runner, req agent.RunRequest, started, marker string, limit time.Duration) {
	t.Helper()
	r, took := RunCancelledOnFile(t, p, req, started)
	if r.Err != nil || r.Last().Type != agent.EventRunInterrupted {
		t.Fatalf("cancelled run: %v, last %+v", r.Err, r.Last())
	}
	if took == 0 || took > Scale(limit) {
		t.Errorf("the cancel took %s (limit %s)", took, Scale(limit))
	}
	NoOrphans(t, marker)
}
