package fakeapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/providers/claude/fakeapi"
	"github.com/threadline-bot/threadline/providers/providertest"
)

func TestMain(m *testing.M) { providertest.Main(m) }

// runCLI runs the real Claude Code in print mode against s and returns its
// stdout lines (stream-json) decoded. It starts as an e2e run does: in the
// sandbox, as the agent user (providertest.Confine), unless
// THREADLINE_TEST_SANDBOX=off.
func runCLI(t *testing.T, s *fakeapi.Server, cwd string, args ...string) []map[string]any {
	t.Helper()
	bin := fakeapi.FindClaude(t)
	env := s.ClaudeEnv(t.TempDir())
	providertest.Sandboxed(t, env)
	providertest.CheckPeers(t, s.PeerUIDs)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ctx, req := providertest.Confine(t, ctx, agent.RunRequest{Cwd: cwd, Env: env})
	kv := []string{"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8"}
	for k, v := range req.Env {
		kv = append(kv, k+"="+v)
	}
	start := time.Now()
	p, err := procrun.Start(ctx, nil, procrun.Spec{Bin: bin, Args: append([]string{"--output-format", "stream-json", "--verbose"}, args...), Dir: cwd, Env: kv})
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	err = p.Each(func(line []byte) error {
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			return fmt.Errorf("non-JSON stdout line %q", line)
		}
		out = append(out, m)
		return nil
	})
	if werr := p.Wait(); err == nil {
		err = werr
	}
	t.Logf("claude %v: %v in %s; stderr: %s", args, err, time.Since(start).Round(time.Millisecond), p.Stderr())
	if err != nil && strings.HasPrefix(err.Error(), "non-JSON") {
		t.Fatal(err)
	}
	return out
}

func result(t *testing.T, lines []map[string]any) map[string]any {
	t.Helper()
	if len(lines) == 0 || lines[len(lines)-1]["type"] != "result" {
		t.Fatalf("no final result line in %d lines", len(lines))
	}
	return lines[len(lines)-1]
}

// TestRealCLIAgainstFake checks the fake against the real Claude Code CLI (run
// in print mode directly, without the provider): streamed text with thinking,
// and a Bash tool round trip.
func TestRealCLIAgainstFake(t *testing.T) {
	fakeapi.FindClaude(t)
	if !providertest.InNetns(t) {
		return
	}
	s := fakeapi.New(t,
		fakeapi.When("compat-text", fakeapi.Thinking([]string{"Think", "ing."}, "Hello ", "from ", "the fake.")),
		fakeapi.When("compat-bash", fakeapi.ToolUse("Bash", map[string]any{"command": "echo compat-marker", "description": "Echo a marker"})),
	)

	lines := runCLI(t, s, t.TempDir(), "-p", "compat-text please", "--include-partial-messages")
	res := result(t, lines)
	if res["is_error"] != false || res["result"] != "Hello from the fake." {
		t.Fatalf("text result: %v", res)
	}
	deltas := 0
	for _, l := range lines {
		if ev, ok := l["event"].(map[string]any); ok && ev["type"] == "content_block_delta" {
			deltas++
		}
	}
	if deltas < 5 {
		t.Errorf("%d stream deltas forwarded, want >= 5", deltas)
	}

	lines = runCLI(t, s, t.TempDir(), "-p", "compat-bash now", "--allowedTools", "Bash")
	res = result(t, lines)
	if res["is_error"] != false || !strings.Contains(res["result"].(string), "Tool result: compat-marker") {
		t.Fatalf("bash result: %v", res)
	}
	reqs := s.MessageRequests()
	last := reqs[len(reqs)-1]
	if tr := last.ToolResults(); len(tr) != 1 || strings.TrimSpace(tr[0].ResultText()) != "compat-marker" {
		t.Errorf("tool_result seen by the fake: %+v", tr)
	}
	for _, r := range reqs {
		if !r.Body.Stream || r.RawQuery != "beta=true" {
			t.Errorf("unexpected request %s %s?%s stream=%v", r.Method, r.Path, r.RawQuery, r.Body.Stream)
		}
	}
	for _, r := range s.Requests() {
		if !r.IsMessages() {
			t.Errorf("non-messages request %s %s", r.Method, r.Path)
		}
	}
}
