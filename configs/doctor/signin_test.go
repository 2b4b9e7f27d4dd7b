// SignInProblem: the warning and its fix for an agent that cannot sign in.

package doctor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/providers/claude"
)

func TestSignInProblem(t *testing.T) {
	dir := t.TempDir()
	noClaudeLogin(t, dir)
	d := claude.Descriptor()
	msg := SignInProblem(d, nil)
	for _, want := range []string{"threadline: claude cannot sign in (no ANTHROPIC_API_KEY", "fix: export ANTHROPIC_API_KEY=… before starting threadline",
		"agents.claude.env", "run `claude /login` as"} {
		if !strings.Contains(msg, want) {
			t.Errorf("no %q in:\n%s", want, msg)
		}
	}
	iso := &procrun.Isolation{User: "threadline-agent", Home: filepath.Join(dir, "agent-home")}
	if msg := SignInProblem(d, iso); !strings.Contains(msg, "sudo -u threadline-agent -H claude /login") || !strings.Contains(msg, "host.user") {
		t.Errorf("isolated fix:\n%s", msg)
	}
	// Signed in: by an exported key, or a credentials file in the agent
	// user's home.
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-x")
	if msg := SignInProblem(d, nil); msg != "" {
		t.Errorf("exported key, still warned: %s", msg)
	}
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	if err := os.MkdirAll(filepath.Join(iso.Home, ".claude"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(iso.Home, ".claude", ".credentials.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if msg := SignInProblem(d, iso); msg != "" {
		t.Errorf("the agent user is logged in, still warned: %s", msg)
	}
	// An agent whose sign-in cannot be checked is not warned about.
	if msg := SignInProblem(registry.Definition{ID: "x", Auth: registry.AuthCheck{Note: "keyring"}}, nil); msg != "" {
		t.Errorf("unknown state warned: %s", msg)
	}
}

// noClaudeLogin clears every way Claude could sign in from the test's
// environment, with HOME and CLAUDE_CONFIG_DIR in dir.
func noClaudeLogin(t *testing.T, dir string) {
	t.Helper()
	for _, k := range []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"} {
		t.Setenv(k, "")
	}
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("CLAUDE_CONFIG_DIR", filepath.Join(home, ".claude"))
}
