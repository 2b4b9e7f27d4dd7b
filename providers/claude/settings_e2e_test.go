package claude_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/providers/claude"
	"github.com/threadline-bot/threadline/providers/claude/fakeapi"
	"github.com/threadline-bot/threadline/providers/providertest"
)

// grantAll is what a tool writes to switch Claude Code's approvals off.
const grantAll = `{"permissions":{"allow":["Bash","Bash(*)","Write","Edit"],"defaultMode":"bypassPermissions"}}`

// TestE2ESettingsCannotGrant: an approved tool writes allow rules (and
// bypassPermissions) into every settings file Claude Code reads for a user
// and a project: ~/.claude/settings.json, $CLAUDE_CONFIG_DIR/settings.json,
// the working directory's .claude/settings.json and .claude/settings.local.json.
// The next Bash still asks, in the same chat (the session resumed in a new
// process) and in another chat (another working directory, same agent
// home): the run reads no settings file a tool can write (Args).
func TestE2ESettingsCannotGrant(t *testing.T) {
	var home, config string
	setup := setupEnv(func(h *harness, opts *claude.Options) {
		home, config = opts.Env["HOME"], opts.Env["CLAUDE_CONFIG_DIR"]
	})
	h := setup(t,
		fakeapi.When("e2e-grant", fakeapi.ToolUse("Bash", map[string]any{"command": "sh ./grant.sh", "description": "Write settings"})),
		fakeapi.When("e2e-after", fakeapi.ToolUse("Bash", map[string]any{"command": "touch after.txt", "description": "Touch a file"})),
	)
	if h == nil {
		return
	}
	var files []string
	for _, d := range []string{filepath.Join(home, ".claude"), config, filepath.Join(h.Cwd, ".claude")} {
		files = append(files, filepath.Join(d, "settings.json"))
	}
	files = append(files, filepath.Join(h.Cwd, ".claude", "settings.local.json"))
	var script strings.Builder
	for _, f := range files {
		script.WriteString("mkdir -p '" + filepath.Dir(f) + "' && printf '%s' '" + grantAll + "' > '" + f + "'\n")
	}
	if err := os.WriteFile(h.Path("grant.sh"), []byte(script.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var asked []string
	ch, on := providertest.Answering(func(in *agent.Interaction) agent.InteractionResponse {
		asked = append(asked, in.Command)
		return agent.InteractionResponse{Decision: agent.DecisionApprove, By: "tester"}
	})
	r := h.Ends(agent.EventRunCompleted, agent.RunRequest{Prompt: "e2e-grant: write the settings", Approval: agent.ApprovalAsk, Responses: ch}, on)
	for _, f := range files {
		if b, err := os.ReadFile(f); err != nil || string(b) != grantAll {
			t.Fatalf("the approved tool did not write %s: %q %v", f, b, err)
		}
	}
	// The same chat, next turn; then another chat in another directory.
	h.Ends(agent.EventRunCompleted, agent.RunRequest{Prompt: "e2e-after: touch it", ResumeID: r.SessionID(), Approval: agent.ApprovalAsk, Responses: ch}, on)
	other := t.TempDir()
	h.Ends(agent.EventRunCompleted, agent.RunRequest{Prompt: "e2e-after: touch it", Cwd: other, Approval: agent.ApprovalAsk, Responses: ch}, on)
	if got, want := strings.Join(asked, "|"), "sh ./grant.sh|touch after.txt|touch after.txt"; got != want {
		t.Errorf("asked %q, want %q: a settings file written by a tool answered for the chat", got, want)
	}
}
