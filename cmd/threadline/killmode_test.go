// What systemd does on `systemctl stop/restart` with the unit's
// KillMode=process, done to a real serve process: relayed runs survive and
// the next serve reattaches them.

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/prompt"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/store"
)

// serveBotEnv selects the serve role of the test binary.
const serveBotEnv = "THREADLINE_TEST_SERVE_BOT"

// unitStopTimeout is the unit's TimeoutStopSec: systemd's SIGKILL follows
// the SIGTERM after it.
const unitStopTimeout = 60 * time.Second

func init() {
	if os.Getenv(serveBotEnv) == "1" {
		os.Exit(serveBot())
	}
}

// serveBot is `threadline serve` with a fake front-end: SIGTERM ends it as it
// ends cmdServe (signal.NotifyContext). It starts one relayed streaming run,
// prints "run ID" and "serving".
func serveBot() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := relayTestConfig(os.Getenv("TL_DB"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg.HTTP.Listen = "127.0.0.1:0"
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	a, err := openApp(context.Background(), cfg, log, agent.ApprovalAsk, withRelays(os.Getenv("TL_RELAYS")))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := a.store.CreateChat(ctx, &store.Chat{ID: "k0", Agent: "claude", Cwd: os.Getenv("TL_CWD")}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	r, err := a.prompt.Start(ctx, prompt.StartRequest{ChatID: "k0", Prompt: "stream", By: "test"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("run %s\n", r.ID)
	front := &fakeFront{ran: make(chan struct{}), stopped: make(chan struct{})}
	go func() { <-front.ran; fmt.Println("serving") }()
	if err := serve(ctx, a, []frontEnd{front}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestUnitRestartKeepsRelayedRuns does to a serve process exactly what
// systemd does on `systemctl stop` or `restart` of configs/threadline.service
// (KillMode=process, KillSignal=SIGTERM, TimeoutStopSec=60): SIGTERM to the
// main process only; SIGKILL to it only, should it still run after
// TimeoutStopSec. Nothing is sent to the relays or agents, which systemd's
// default KillMode=control-group would have killed with the whole cgroup.
// The relayed run survives and the next serve reattaches and completes it,
// every delta persisted once.
func TestUnitRestartKeepsRelayedRuns(t *testing.T) {
	dir := isolate(t)
	relays, err := os.MkdirTemp("", "tlu")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killRelays(relays); os.RemoveAll(relays) })
	db := filepath.Join(dir, "tl.db")
	exe, _ := os.Executable()
	bot := exec.Command(exe)
	bot.Env = append(os.Environ(), serveBotEnv+"=1", "TL_DB="+db, "TL_RELAYS="+relays, "TL_CWD="+dir)
	var botErr lockedLog
	bot.Stderr = &botErr
	stdout, err := bot.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := bot.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	var runID string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && sc.Text() != "serving" {
		if id, ok := strings.CutPrefix(sc.Text(), "run "); ok {
			runID = id
		}
	}
	go func() { exited <- bot.Wait() }()
	if runID == "" {
		_ = bot.Process.Kill()
		t.Fatalf("serve started no run:\n%s", botErr.String())
	}
	runs := map[string]string{"k0": runID}
	watch, err := store.Open(context.Background(), db, nil)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Duration(fakeChunks) * fakeTick); time.Now().Before(deadline) && !allStreaming(watch, runs, 10); {
		time.Sleep(10 * time.Millisecond)
	}
	watch.Close()

	// systemctl stop: SIGTERM to the main pid; SIGKILL to it after TimeoutStopSec.
	if err := bot.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("serve exited with %v after SIGTERM:\n%s", err, botErr.String())
		}
	case <-time.After(unitStopTimeout):
		_ = bot.Process.Signal(syscall.SIGKILL)
		<-exited
		t.Errorf("serve was still running %s after SIGTERM; systemd would SIGKILL it:\n%s", unitStopTimeout, botErr.String())
	}
	if !strings.Contains(botErr.String(), "runs detached") {
		t.Fatalf("serve did not detach its relayed run:\n%s", botErr.String())
	}
	var meta relayMeta
	b, _ := os.ReadFile(filepath.Join(relays, runID, "meta.json"))
	if err := json.Unmarshal(b, &meta); err != nil || meta.RelayPid == 0 {
		t.Fatalf("relay meta: %s %v", b, err)
	}
	for _, pid := range []int{meta.RelayPid, meta.ChildPid} {
		if err := syscall.Kill(pid, 0); err != nil {
			t.Fatalf("pid %d (relay %d, agent %d) did not survive the stop: %v", pid, meta.RelayPid, meta.ChildPid, err)
		}
	}
	st, err := store.OpenAndMigrate(context.Background(), db, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := len(runEvents(t, st, "k0", runID))
	st.Close()

	// systemctl start: the next serve reattaches.
	ctx := context.Background()
	cfg, err := relayTestConfig(db)
	if err != nil {
		t.Fatal(err)
	}
	var logs lockedLog
	a2, err := openApp(ctx, cfg, slog.New(slog.NewTextHandler(&logs, nil)), agent.ApprovalAsk, withRelays(relays))
	if err != nil {
		t.Fatal(err)
	}
	defer a2.Close()
	for deadline := time.Now().Add(60 * time.Second); ; {
		r, _ := a2.store.GetRun(ctx, runID)
		if r.Status == runhub.StatusCompleted {
			break
		}
		if r.Status != runhub.StatusRunning || time.Now().After(deadline) {
			t.Fatalf("run after the restart: %s (%s)\n%s", r.Status, r.Error, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	evs := runEvents(t, a2.store, "k0", runID)
	seen := map[string]bool{}
	deltas := 0
	for _, e := range evs {
		if seen[e.Type+string(e.Payload)] {
			t.Errorf("duplicate %s %s", e.Type, e.Payload)
		}
		seen[e.Type+string(e.Payload)] = true
		if e.Type == string(agent.EventAssistantDelta) {
			deltas++
		}
	}
	if deltas != fakeChunks || before == 0 || before >= len(evs) {
		t.Errorf("%d deltas (want %d), %d events before the restart, %d after", deltas, fakeChunks, before, len(evs))
	}
}
