// A plain CLI's run survives a serve restart: relayed, detached at shutdown,
// reattached and completed by the next process, every line recorded once.

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/prompt"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/configs"
	"github.com/threadline-bot/threadline/store"
)

// plainLines is how many lines the fake plain CLI prints.
const plainLines = 40

// fakePlainCLI writes a Grok Build stand-in into dir: it prints
// plainLines lines (blank lines between them), one every 25 ms.
func fakePlainCLI(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "grok")
	script := fmt.Sprintf(`#!/bin/sh
if [ "$1" = --version ]; then echo "grok 0.1.0"; exit 0; fi
i=1
while [ $i -le %d ]; do printf 'line %%d\n\n' $i; sleep 0.025; i=$((i+1)); done
`, plainLines)
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

func TestServeRestartReattachesPlainRun(t *testing.T) {
	dir := isolate(t)
	relays, err := os.MkdirTemp("", "tlsp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killRelays(relays); os.RemoveAll(relays) })
	cfg := &configs.Config{
		Database: configs.DatabaseConfig{URL: filepath.Join(dir, "tl.db")},
		Agents:   map[string]configs.AgentConfig{"grok": {Bin: fakePlainCLI(t, dir)}},
		HTTP:     configs.HTTPConfig{Listen: "127.0.0.1:0"},
	}
	ctx := context.Background()
	var logs lockedLog
	log := slog.New(slog.NewTextHandler(&logs, nil))
	a, err := openApp(ctx, cfg, log, agent.ApprovalAsk, withRelays(relays))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.store.CreateChat(ctx, &store.Chat{ID: "p0", Agent: "grok", Cwd: dir}); err != nil {
		t.Fatal(err)
	}
	r, err := a.prompt.Start(ctx, prompt.StartRequest{ChatID: "p0", Prompt: "write lines", By: "test"})
	if err != nil {
		t.Fatal(err)
	}
	countDeltas := func(st *store.Store) (n int, text string) {
		var b strings.Builder
		for _, e := range runEvents(t, st, "p0", string(r.ID)) {
			if e.Type == string(agent.EventAssistantDelta) {
				var ev agent.Event
				if err := json.Unmarshal(e.Payload, &ev); err != nil {
					t.Fatalf("delta payload %s: %v", e.Payload, err)
				}
				n++
				b.WriteString(ev.Text)
			}
		}
		return n, b.String()
	}
	// Shut down while the CLI is halfway through its output.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if n, _ := countDeltas(a.store); n >= 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no output persisted:\n%s", logs.String())
		}
	}
	front := &fakeFront{ran: make(chan struct{}), stopped: make(chan struct{})}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- serve(sctx, a, []frontEnd{front}) }()
	<-front.ran
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "runs detached") || !strings.Contains(logs.String(), "runs=1") {
		t.Fatalf("no detach logged:\n%s", logs.String())
	}
	st, err := store.OpenAndMigrate(ctx, cfg.Database.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := st.GetRun(ctx, string(r.ID))
	before, _ := countDeltas(st)
	st.Close()
	if got.Status != runhub.StatusRunning {
		t.Fatalf("detached run is %s", got.Status)
	}
	if before >= 2*plainLines {
		t.Fatalf("the CLI had finished before the restart (%d deltas): nothing to prove", before)
	}

	a2, err := openApp(ctx, cfg, log, agent.ApprovalAsk, withRelays(relays))
	if err != nil {
		t.Fatal(err)
	}
	defer a2.Close()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		run, _ := a2.store.GetRun(ctx, string(r.ID))
		if run.Status == runhub.StatusCompleted {
			break
		}
		if run.Status != runhub.StatusRunning || time.Now().After(deadline) {
			t.Fatalf("run %s (%s)\n%s", run.Status, run.Error, logs.String())
		}
	}
	n, text := countDeltas(a2.store)
	// Every line once, in order: the reattached run's replay of the journal
	// matched what was recorded before the restart delta for delta.
	var want strings.Builder
	for i := 1; i <= plainLines; i++ {
		fmt.Fprintf(&want, "line %d\n\n", i)
	}
	if n != 2*plainLines || text != want.String() {
		t.Errorf("%d deltas (%d before the restart), want %d; text %q", n, before, 2*plainLines, text)
	}
}
