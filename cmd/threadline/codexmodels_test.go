package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/providers/codexharness"
	"github.com/threadline-bot/threadline/providers/providertest"
)

// TestCodexDiscoveryInAgents: `threadline agents` lists Codex's own catalog
// (the REAL codex CLI, offline in a network namespace: app-server model/list
// or `codex debug models`), not the descriptor's fallback list, and the next
// `agents` takes it from the capability cache.
func TestCodexDiscoveryInAgents(t *testing.T) {
	bin := providertest.FindCLI(t, "codex", "THREADLINE_CODEX_BIN")
	if !providertest.InNetns(t) {
		return
	}
	dir := isolate(t)
	home := filepath.Join(dir, "codex-home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "debug", "models")
	cmd.Env = append(os.Environ(), "CODEX_HOME="+home)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("codex debug models: %v", err)
	}
	cat, err := codexharness.ParseDebugModels(out)
	if err != nil || len(cat.ModelIDs()) == 0 {
		t.Fatalf("codex debug models: %v, %d models", err, len(cat.ModelIDs()))
	}
	raw, _ := yaml.Marshal(map[string]any{
		"database": map[string]any{"url": filepath.Join(dir, "tl.db")},
		"agents":   map[string]any{"codex": map[string]any{"bin": bin, "env": map[string]string{"CODEX_HOME": home}}},
	})
	cfg := filepath.Join(dir, "threadline.yaml")
	if err := os.WriteFile(cfg, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	codexReport := func() registry.Report {
		t.Helper()
		code, out, errOut, err := run(t, "", "agents", "--json", "--config", cfg)
		if code != 0 || err != nil {
			t.Fatalf("agents: exit %d %v\n%s", code, err, errOut)
		}
		var reports []registry.Report
		if err := json.Unmarshal([]byte(out), &reports); err != nil {
			t.Fatal(err)
		}
		for _, r := range reports {
			if r.ID == "codex" {
				return r
			}
		}
		t.Fatal("no codex report")
		return registry.Report{}
	}
	r := codexReport()
	if r.ModelSource != registry.ModelsLive || len(r.Models) == 0 || slices.Equal(r.Models, []string{"gpt-5.5", "gpt-5.4", "gpt-5.4-mini"}) {
		t.Fatalf("codex models %v (%s), problems %v; codex itself lists %v", r.Models, r.ModelSource, r.Problems, cat.ModelIDs())
	}
	if !slices.Contains(r.Models, cat.ModelIDs()[0]) {
		t.Errorf("agents lists %v, codex debug models %v", r.Models, cat.ModelIDs())
	}
	if again := codexReport(); !again.Cached || !slices.Equal(again.Models, r.Models) {
		t.Errorf("the second agents: cached %v, models %v", again.Cached, again.Models)
	}
}
