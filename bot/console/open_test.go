package console_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/bot/console"
	"github.com/threadline-bot/threadline/chatops/chatstore"
)

// TestOpenerOpen: a target without an id is a new chat (the default agent
// when none is named, the current directory made absolute); with an id, the
// chat with the settings given applied and saved (a new agent clears the
// model); an unknown id and a --cwd that is no directory are refused.
func TestOpenerOpen(t *testing.T) {
	s, id := stack(t)
	ctx := t.Context()
	defaults := 0
	o := console.Opener{Bot: s.Bot, Updates: chatstore.Store{St: s.St}, Where: "test.db",
		DefaultAgent: func() (string, error) { defaults++; return "fake", nil }}

	c, created, err := o.Open(ctx, console.Target{})
	wd, _ := os.Getwd()
	if err != nil || !created || c.Agent != "fake" || c.Cwd != wd || c.ID == "" || defaults != 1 {
		t.Fatalf("new chat: %+v created=%v err=%v (default agent asked %d times)", c, created, err, defaults)
	}
	if _, _, err := o.Open(ctx, console.Target{ID: "no-such"}); err == nil || !strings.Contains(err.Error(), "no chat no-such in test.db") {
		t.Errorf("unknown id: %v", err)
	}
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := o.Open(ctx, console.Target{Cwd: file}); err == nil || !strings.Contains(err.Error(), "is not a directory") {
		t.Errorf("--cwd a file: %v", err)
	}

	dir := t.TempDir()
	c, created, err = o.Open(ctx, console.Target{ID: id, Model: "m1", Cwd: dir, Project: "p"})
	if err != nil || created || c.Model != "m1" || c.Cwd != dir || c.Project != "p" {
		t.Fatalf("continued chat: %+v created=%v err=%v", c, created, err)
	}
	c, _, err = o.Open(ctx, console.Target{ID: id, Agent: "other"})
	if err != nil || c.Agent != "other" || c.Model != "" || c.Cwd != dir {
		t.Fatalf("a new agent: %+v err=%v", c, err)
	}
	saved, err := s.Bot.Chat(ctx, id)
	if err != nil || saved.Agent != "other" || saved.Model != "" || saved.Cwd != dir || saved.Project != "p" {
		t.Errorf("saved: %+v err=%v", saved, err)
	}
	if defaults != 1 {
		t.Errorf("the default agent was asked for a continued chat (%d times)", defaults)
	}
}

// TestPolicy: --interactions deny and accept; empty is deny without a
// terminal (a pipe here); anything else is refused.
func TestPolicy(t *testing.T) {
	for in, want := range map[string]agent.ApprovalPolicy{"": agent.ApprovalDeny, "deny": agent.ApprovalDeny, "accept": agent.ApprovalAccept} {
		p, name, ask, err := console.Policy(in, strings.NewReader(""))
		if err != nil || p != want || name != string(want) || ask {
			t.Errorf("Policy(%q) = %v %q %v %v", in, p, name, ask, err)
		}
	}
	if _, _, _, err := console.Policy("yes", nil); err == nil || !strings.Contains(err.Error(), "use deny or accept") {
		t.Errorf("Policy(yes) = %v", err)
	}
}

// TestNoAgentError: one line per missing default CLI with its install
// command, the others counted; installed agents are named for --agent.
func TestNoAgentError(t *testing.T) {
	defaults := []console.MissingAgent{{ID: "claude", Install: "npm install -g @anthropic-ai/claude-code", Bin: "/opt/claude"}, {ID: "codex", Install: "npm install -g @openai/codex"}}
	others := []console.MissingAgent{{ID: "claude-agent-acp", Install: "npm install -g @zed-industries/claude-agent-acp"}, {ID: "x"}}
	got := console.NoAgentError(defaults, others, nil).Error()
	want := "no agent CLI is installed (not found on PATH). Install one of these, then run this again.\n" +
		"The default agents, tried in this order:\n" +
		"  claude  npm install -g @anthropic-ai/claude-code (the config's bin /opt/claude was not found)\n" +
		"  codex   npm install -g @openai/codex\n" +
		"2 other agents are known: `threadline agents --all` lists each with its install command, path, version and sign-in."
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if got := console.NoAgentError(defaults, nil, []string{"aider"}).Error(); !strings.HasPrefix(got, "none of the default agents is installed (not found on PATH); aider can run here: pick one with --agent") {
		t.Errorf("with aider: %s", got)
	}
}
