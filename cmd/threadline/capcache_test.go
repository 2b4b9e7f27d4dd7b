package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/providers/claude/fakeapi"
)

// TestAgentsWarmCache: `threadline agents` records each probe in the
// database, so the next `agents` (another process, here another call) does
// not run the CLI again: the real Claude Code CLI behind a wrapper that
// counts its runs is probed once, and the warm report, marked cached, says
// the same version.
func TestAgentsWarmCache(t *testing.T) {
	real := fakeapi.FindClaude(t)
	dir := isolate(t)
	count := filepath.Join(dir, "runs")
	wrapper := filepath.Join(dir, "claude")
	if err := os.WriteFile(wrapper, []byte("#!/bin/sh\necho x >> \""+count+"\"\nexec \""+real+"\" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	raw, _ := yaml.Marshal(map[string]any{
		"database": map[string]any{"url": filepath.Join(dir, "tl.db")},
		"agents":   map[string]any{"claude": map[string]any{"bin": wrapper}},
		// The counting wrapper writes outside any sandbox and execs a CLI
		// from elsewhere: this test is about the cache.
		"host": map[string]any{"isolation": "off"},
	})
	cfg := filepath.Join(dir, "threadline.yaml")
	if err := os.WriteFile(cfg, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	runs := func() int {
		b, _ := os.ReadFile(count)
		return strings.Count(string(b), "x")
	}
	claude := func(label string) (registry.Report, time.Duration) {
		t.Helper()
		start := time.Now()
		code, out, errOut, err := run(t, "", "agents", "--json", "--config", cfg)
		took := time.Since(start)
		if code != 0 || err != nil {
			t.Fatalf("%s agents: exit %d %v\n%s", label, code, err, errOut)
		}
		var reports []registry.Report
		if err := json.Unmarshal([]byte(out), &reports); err != nil {
			t.Fatalf("%s agents --json: %v\n%s", label, err, out)
		}
		for _, r := range reports {
			if r.ID == "claude" {
				return r, took
			}
		}
		t.Fatalf("%s: no claude report", label)
		return registry.Report{}, 0
	}
	cold, coldTook := claude("cold")
	if runs() == 0 || cold.Cached || cold.Version == "" || cold.Path != wrapper {
		t.Fatalf("cold probe: %d runs, %+v", runs(), cold)
	}
	probed := runs()
	warm, warmTook := claude("warm")
	if runs() != probed {
		t.Fatalf("the warm probe ran the CLI %d more times", runs()-probed)
	}
	if !warm.Cached || warm.Version != cold.Version || warm.ModelSource != cold.ModelSource {
		t.Fatalf("warm report %+v, cold %+v", warm, cold)
	}
	t.Logf("agents --json: cold %s (%d CLI runs), warm %s (none)", coldTook.Round(time.Millisecond), probed, warmTook.Round(time.Millisecond))
}
