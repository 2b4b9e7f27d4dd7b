package slack

import (
	"testing"
	"time"

	"github.com/threadline-bot/threadline/chatops"
)

// TestRunEnd: a home tab line says how the thread's latest run ended, as
// the footer of its answer begins.
func TestRunEnd(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		status string
		d      time.Duration
		want   string
	}{
		{"completed", 12 * time.Second, "Done in 12s"},
		{"interrupted", 3*time.Minute + 5*time.Second, "Stopped after 3m05s"},
		{"failed", 2*time.Hour + 7*time.Minute, "Failed after 2h07m"},
		{"running", 0, ""},
		{"weird", time.Second, ""},
	} {
		h := chatops.HomeThread{Status: c.status, Started: at}
		if c.status != "running" {
			h.Ended = at.Add(c.d)
		}
		if got := runEnd(h); got != c.want {
			t.Errorf("runEnd(%s, %v) = %q, want %q", c.status, c.d, got, c.want)
		}
	}
	if got := runEnd(chatops.HomeThread{Status: "completed"}); got != "Done" {
		t.Errorf("without times: %q", got)
	}
}

// TestHomeBehind: a publish is put off while the store still shows as
// running a run whose thread already showed its end, and not for a run that
// started after that end, nor for one still running.
func TestHomeBehind(t *testing.T) {
	p := chatops.Place{Platform: Platform, Workspace: "T1", Channel: "C1", Thread: "1.1"}
	h := newHome(nil, nil, nil, true, nil, t.Context())
	ended := time.Now()
	h.runs[p] = seenRun{running: false, at: ended}
	run := func(started time.Time) []chatops.HomeThread {
		return []chatops.HomeThread{{Place: p, Status: "running", Started: started}}
	}
	if !h.behind(run(ended.Add(-time.Second))) {
		t.Error("a run whose end was shown, still running in the store, is not behind")
	}
	if h.behind(run(ended.Add(time.Second))) {
		t.Error("a run started after the shown end is behind")
	}
	if h.behind([]chatops.HomeThread{{Place: p, Status: "completed", Started: ended.Add(-time.Second), Ended: ended}}) {
		t.Error("a finished run is behind")
	}
	h.runs[p] = seenRun{running: true, at: ended}
	if h.behind(run(ended.Add(-time.Second))) {
		t.Error("a run shown running is behind")
	}
}
