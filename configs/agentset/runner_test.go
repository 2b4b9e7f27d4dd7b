package agentset_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/configs/agentset"
)

// TestRunnerWithoutConstructor: a descriptor without a provider here is
// ErrNoRunner, naming the agent.
func TestRunnerWithoutConstructor(t *testing.T) {
	_, err := agentset.Runner(registry.Definition{ID: "jules", Format: "plain"}, nil, slog.New(slog.DiscardHandler))
	if !errors.Is(err, agentset.ErrNoRunner) || !strings.Contains(err.Error(), "jules") {
		t.Fatalf("Runner without a constructor = %v", err)
	}
}

// TestWriteReports: without --all the missing agents are left out (none
// left: how to list them); --json prints every report.
func TestWriteReports(t *testing.T) {
	reports := []registry.Report{{ID: "claude", Status: registry.StatusMissing}, {ID: "codex", Status: registry.StatusMissing}}
	var b bytes.Buffer
	if err := agentset.WriteReports(&b, reports, false, false); err != nil || !strings.Contains(b.String(), "No agent CLI is installed") {
		t.Errorf("installed only: %v %q", err, b.String())
	}
	b.Reset()
	if err := agentset.WriteReports(&b, reports, true, false); err != nil || !strings.Contains(b.String(), "claude") || !strings.Contains(b.String(), "codex") {
		t.Errorf("--all: %v %q", err, b.String())
	}
	b.Reset()
	var back []registry.Report
	if err := agentset.WriteReports(&b, reports, false, true); err != nil || json.Unmarshal(b.Bytes(), &back) != nil || len(back) != 2 {
		t.Errorf("--json: %v %q", err, b.String())
	}
	if len(reports) != 2 || reports[0].ID != "claude" {
		t.Errorf("WriteReports changed its argument: %+v", reports)
	}
}
