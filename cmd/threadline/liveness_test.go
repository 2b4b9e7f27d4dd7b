package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/configs"
	"github.com/threadline-bot/threadline/store"
)

// TestRestartMarksDeadRunsAndExpiresCards: a run left "running" by a process that
// died is marked interrupted on the next start, its pending approval expires, and
// both are appended as events so every front-end shows it.
func TestRestartMarksDeadRunsAndExpiresCards(t *testing.T) {
	dir := isolate(t)
	cfg := &configs.Config{Database: configs.DatabaseConfig{URL: filepath.Join(dir, "tl.db")}}
	ctx := context.Background()
	st, err := store.OpenAndMigrate(ctx, cfg.Database.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	st.CreateChat(ctx, &store.Chat{ID: "c1", Agent: "claude"})
	if err := st.StartRun(ctx, store.RunRecord{ID: "dead", ChatID: "c1", Owner: "other:1", StartedAt: time.Now().Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateInteraction(ctx, store.Interaction{RunID: "dead", ID: "i1", ChatID: "c1", NativeID: []byte(`"req-1"`), Kind: "command_approval"}); err != nil {
		t.Fatal(err)
	}
	// A live run of another process, heartbeating: left alone.
	st.CreateChat(ctx, &store.Chat{ID: "c2", Agent: "claude"})
	if err := st.StartRun(ctx, store.RunRecord{ID: "alive", ChatID: "c2", Owner: "other:2"}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	a, err := openApp(ctx, cfg, slog.New(slog.DiscardHandler), agent.ApprovalDeny)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if r, _ := a.store.GetRun(ctx, "dead"); r.Status != runhub.StatusInterrupted {
		t.Errorf("dead run: %+v", r)
	}
	if r, _ := a.store.GetRun(ctx, "alive"); r.Status != runhub.StatusRunning {
		t.Errorf("live run touched: %+v", r)
	}
	if in, _ := a.store.GetInteraction(ctx, "dead", "i1"); in.Status != store.InteractionExpired {
		t.Errorf("interaction: %+v", in)
	}
	evs, _ := a.store.EventsAfter(ctx, "c1", 0, 10)
	var types []string
	for _, ev := range evs {
		types = append(types, ev.Type)
	}
	if got := strings.Join(types, " "); got != "run.interrupted interaction.resolved" {
		t.Errorf("events %q", got)
	}
}

// TestSweepKeepsRelayedRuns: a `chat` or `run` process started while `serve` is
// down must not mark serve's relayed runs interrupted; serve reattaches them.
func TestSweepKeepsRelayedRuns(t *testing.T) {
	dir := isolate(t)
	relays := filepath.Join(dir, "relays")
	t.Setenv("THREADLINE_RELAY_DIR", relays)
	cfg := &configs.Config{Database: configs.DatabaseConfig{URL: filepath.Join(dir, "tl.db")}}
	ctx := context.Background()
	st, err := store.OpenAndMigrate(ctx, cfg.Database.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	st.CreateChat(ctx, &store.Chat{ID: "c1", Agent: "claude"})
	st.CreateChat(ctx, &store.Chat{ID: "c2", Agent: "claude"})
	old := time.Now().Add(-time.Hour)
	st.StartRun(ctx, store.RunRecord{ID: "relayed", ChatID: "c1", Owner: "serve:1", StartedAt: old})
	st.StartRun(ctx, store.RunRecord{ID: "plain", ChatID: "c2", Owner: "run:2", StartedAt: old})
	st.Close()
	// The relayed run's agent finished while serve was down: its whole output is journaled.
	os.MkdirAll(filepath.Join(relays, "relayed"), 0o700)
	os.WriteFile(filepath.Join(relays, "relayed", "exit.json"), []byte(`{"code":0}`), 0o600)

	a, err := openApp(ctx, cfg, slog.New(slog.DiscardHandler), agent.ApprovalDeny)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if r, _ := a.store.GetRun(ctx, "relayed"); r.Status != runhub.StatusRunning {
		t.Errorf("relayed run: %s", r.Status)
	}
	if r, _ := a.store.GetRun(ctx, "plain"); r.Status != runhub.StatusInterrupted {
		t.Errorf("run without a relay: %s", r.Status)
	}
}
