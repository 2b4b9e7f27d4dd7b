package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/runhub"
)

// memStore is a Store over a map, recording what the policy did.
type memStore struct {
	mu           sync.Mutex
	runs         map[string]*Run
	interrupted  map[string]string // run id → reason
	pending      []Interaction     // pending interactions of runs
	heartbeatsOf []string
}

func newMemStore(runs ...Run) *memStore {
	m := &memStore{runs: map[string]*Run{}, interrupted: map[string]string{}}
	for _, r := range runs {
		m.runs[string(r.ID)] = &r
	}
	return m
}

func (m *memStore) Run(_ context.Context, id string) (Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.runs[id]
	if !ok {
		return Run{}, fmt.Errorf("run %s: %w", id, ErrNotFound)
	}
	return *r, nil
}

func (m *memStore) RunningRun(_ context.Context, chatID string) (Run, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.runs {
		if string(r.ChatID) == chatID && r.Status == runhub.StatusRunning {
			return *r, true, nil
		}
	}
	return Run{}, false, nil
}

func (m *memStore) HeartbeatRuns(_ context.Context, owner string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.heartbeatsOf = append(m.heartbeatsOf, owner)
	return 0, nil
}

func (m *memStore) MarkStaleRunsInterrupted(_ context.Context, before time.Time, keep ...string) ([]Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Run
	for _, r := range m.runs {
		if r.Status != runhub.StatusRunning || r.lastSeen().After(before) || contains(keep, string(r.ID)) {
			continue
		}
		r.Status = runhub.StatusInterrupted
		m.interrupted[string(r.ID)] = "stale"
		out = append(out, *r)
	}
	return out, nil
}

func (m *memStore) InterruptRun(_ context.Context, id agent.RunID, reason string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.runs[string(id)]
	if !ok || r.Status != runhub.StatusRunning {
		return false, nil
	}
	r.Status = runhub.StatusInterrupted
	m.interrupted[string(id)] = reason
	return true, nil
}

func (m *memStore) ExpireOrphanedInteractions(context.Context) ([]Interaction, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out, keep []Interaction
	for _, in := range m.pending {
		if r, ok := m.runs[string(in.RunID)]; ok && r.Status == runhub.StatusRunning {
			keep = append(keep, in)
			continue
		}
		out = append(out, in)
	}
	m.pending = keep
	return out, nil
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// memEvents records appended events.
type memEvents struct {
	mu  sync.Mutex
	evs []runhub.Event
}

func (e *memEvents) Append(_ context.Context, chatID agent.ChatID, runID agent.RunID, typ string, payload json.RawMessage) (runhub.Event, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ev := runhub.Event{ChatID: chatID, RunID: runID, Type: typ, Payload: payload, Seq: int64(len(e.evs) + 1)}
	e.evs = append(e.evs, ev)
	return ev, nil
}

func (e *memEvents) types() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, ev := range e.evs {
		out = append(out, string(ev.RunID)+" "+ev.Type)
	}
	return out
}

// deadPID starts a process, waits for it to exit and returns its pid, which
// no process has now (pids are not reused this soon on an idle host; the
// test checks it).
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if processAlive(pid, time.Time{}) {
		t.Skipf("pid %d was reused at once", pid) // not a pass: reported as skipped
	}
	return pid
}

func owner(pid int) string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s:%d", host, pid)
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestReclaimDeadLocalOwner: the chat's run belongs to an exited process of
// this host: Reclaim interrupts it with the usual message, expires its card
// and reports the chat free; a second Reclaim finds nothing.
func TestReclaimDeadLocalOwner(t *testing.T) {
	now := time.Now()
	st := newMemStore(Run{ID: "r1", ChatID: "c1", Status: runhub.StatusRunning, Owner: owner(deadPID(t)), StartedAt: now, HeartbeatAt: now})
	st.pending = []Interaction{{ID: "i1", ChatID: "c1", RunID: "r1"}}
	evs := &memEvents{}
	l := New(st, evs, Config{Owner: OwnerID(), RelayDir: t.TempDir(), Log: quiet()})
	freed, err := l.Reclaim(context.Background(), "c1")
	if err != nil || !freed {
		t.Fatalf("Reclaim: %v %v", freed, err)
	}
	if st.runs["r1"].Status != runhub.StatusInterrupted || st.interrupted["r1"] != reasonOwnerExited {
		t.Errorf("run: %+v, reason %q", st.runs["r1"], st.interrupted["r1"])
	}
	if got := fmt.Sprint(evs.types()); got != "[r1 run.interrupted r1 interaction.resolved]" {
		t.Errorf("events %s", got)
	}
	var ev agent.Event
	if err := json.Unmarshal(evs.evs[0].Payload, &ev); err != nil || ev.Text != InterruptedByStop {
		t.Errorf("message %q %v", ev.Text, err)
	}
	if freed, err := l.Reclaim(context.Background(), "c1"); freed || err != nil {
		t.Errorf("second Reclaim: %v %v", freed, err)
	}
}

// TestReclaimKeepsLiveAndForeignRuns: runs of a live process of this host,
// of this very process, of another host, of a named replica and of a dead
// process whose agent lives on under a relay keep their chat.
func TestReclaimKeepsLiveAndForeignRuns(t *testing.T) {
	now := time.Now()
	dead := deadPID(t)
	relays := t.TempDir()
	// A relay whose agent exited with its output journaled: reattachable.
	if err := os.MkdirAll(filepath.Join(relays, "relayed"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(relays, "relayed", "exit.json"), []byte(`{"code":0}`), 0o600); err != nil {
		t.Fatal(err)
	}
	runs := []Run{
		{ID: "live", ChatID: "live", Owner: owner(os.Getppid())},
		{ID: "self", ChatID: "self", Owner: OwnerID()},
		{ID: "foreign", ChatID: "foreign", Owner: fmt.Sprintf("another-host-%d:%d", os.Getpid(), dead)},
		{ID: "named", ChatID: "named", Owner: "replica-a"},
		{ID: "relayed", ChatID: "relayed", Owner: owner(dead)},
	}
	for i := range runs {
		runs[i].Status, runs[i].StartedAt, runs[i].HeartbeatAt = runhub.StatusRunning, now, now
	}
	st := newMemStore(runs...)
	evs := &memEvents{}
	l := New(st, evs, Config{Owner: OwnerID(), RelayDir: relays, Log: quiet()})
	for _, r := range runs {
		freed, err := l.Reclaim(context.Background(), string(r.ChatID))
		if err != nil || freed {
			t.Errorf("%s: Reclaim %v %v", r.ID, freed, err)
		}
		if st.runs[string(r.ID)].Status != runhub.StatusRunning {
			t.Errorf("%s: %s", r.ID, st.runs[string(r.ID)].Status)
		}
	}
	if len(evs.evs) != 0 {
		t.Errorf("events %v", evs.types())
	}
}

// TestReclaimReusedPID: the owner's pid now belongs to a process that started
// after the owner's last heartbeat (here: the test runner, an hour "after" a
// heartbeat an hour old): that is not the owner, so the run is reclaimed.
func TestReclaimReusedPID(t *testing.T) {
	if _, err := processStart(os.Getppid()); err != nil {
		t.Skipf("no process start times here: %v", err)
	}
	old := time.Now().Add(-24 * time.Hour)
	st := newMemStore(Run{ID: "r1", ChatID: "c1", Status: runhub.StatusRunning, Owner: owner(os.Getppid()), StartedAt: old, HeartbeatAt: old})
	l := New(st, &memEvents{}, Config{Owner: OwnerID(), Log: quiet()})
	freed, err := l.Reclaim(context.Background(), "c1")
	if err != nil || !freed {
		t.Fatalf("Reclaim of a reused pid: %v %v", freed, err)
	}
}

// TestProcessStart: this process's start time read from /proc is a moment
// before now.
func TestProcessStart(t *testing.T) {
	started, err := processStart(os.Getpid())
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	if age := time.Since(started); age < -startSlack || age > 10*time.Minute {
		t.Errorf("process started %s ago (%s)", age, started)
	}
	if !processAlive(os.Getpid(), time.Now()) || processAlive(os.Getpid(), started.Add(-time.Hour)) {
		t.Error("processAlive disagrees with the start time")
	}
}

// TestSweepAndRun: Run heartbeats for its owner, fences with Owns and sweeps
// stale runs (interrupted with the message, card expired), keeping relayed
// ones; it stops when ctx ends.
func TestSweepAndRun(t *testing.T) {
	old := time.Now().Add(-time.Hour)
	relays := t.TempDir()
	if err := os.MkdirAll(filepath.Join(relays, "relayed"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(relays, "relayed", "exit.json"), []byte(`{"code":0}`), 0o600); err != nil {
		t.Fatal(err)
	}
	st := newMemStore(
		Run{ID: "stale", ChatID: "c1", Status: runhub.StatusRunning, Owner: "gone", StartedAt: old},
		Run{ID: "relayed", ChatID: "c2", Status: runhub.StatusRunning, Owner: "gone", StartedAt: old},
		Run{ID: "mine", ChatID: "c3", Status: runhub.StatusRunning, Owner: "me", StartedAt: time.Now().Add(time.Hour)},
	)
	st.pending = []Interaction{{ID: "i1", ChatID: "c1", RunID: "stale"}}
	evs := &memEvents{}
	l := New(st, evs, Config{Owner: "me", RelayDir: relays, HeartbeatEvery: time.Millisecond, Log: quiet()})
	f := &recordFencer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); l.Run(ctx, f) }()
	deadline := time.Now().Add(10 * time.Second)
	for f.calls() < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	if f.calls() < 2 {
		t.Fatal("Run never fenced")
	}
	if st.runs["stale"].Status != runhub.StatusInterrupted || st.runs["relayed"].Status != runhub.StatusRunning {
		t.Errorf("stale %s, relayed %s", st.runs["stale"].Status, st.runs["relayed"].Status)
	}
	if got := fmt.Sprint(evs.types()); got != "[stale run.interrupted stale interaction.resolved]" {
		t.Errorf("events %s", got)
	}
	if len(st.heartbeatsOf) == 0 || st.heartbeatsOf[0] != "me" {
		t.Errorf("heartbeats %v", st.heartbeatsOf)
	}
	if !f.owned["mine"] || f.owned["stale"] {
		t.Errorf("Owns as the fence saw it: %v", f.owned)
	}
}

// recordFencer calls owned for the runs it knows and records the answers.
type recordFencer struct {
	mu    sync.Mutex
	n     int
	owned map[string]bool
}

func (f *recordFencer) Fence(ctx context.Context, owned func(context.Context, string) (bool, error)) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	f.owned = map[string]bool{}
	for _, id := range []string{"mine", "stale"} {
		ok, err := owned(ctx, id)
		if err != nil {
			panic(err)
		}
		f.owned[id] = ok
	}
	return nil
}

func (f *recordFencer) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// TestOwnsUnknownRun: an unknown run is an error wrapping ErrNotFound, so a
// fence keeps the run rather than stop it on a database hiccup.
func TestOwnsUnknownRun(t *testing.T) {
	l := New(newMemStore(), &memEvents{}, Config{Owner: "me", Log: quiet()})
	if _, err := l.Owns(context.Background(), "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Owns: %v", err)
	}
}
