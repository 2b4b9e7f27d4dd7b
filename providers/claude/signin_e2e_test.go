// End-to-end: the real Claude CLI's own sign-in failures become the hint.

package claude_test

import (
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/providers/claude"
	"github.com/threadline-bot/threadline/providers/claude/fakeapi"
	"github.com/threadline-bot/threadline/providers/providertest"
)

// TestE2ENotLoggedInBecomesHint: with no key and no login the CLI answers
// "Not logged in · Please run /login"; the run fails with how to sign in.
func TestE2ENotLoggedInBecomesHint(t *testing.T) {
	bin := fakeapi.FindClaude(t)
	if !providertest.InNetns(t) {
		return
	}
	fake := fakeapi.New(t, fakeapi.Text("must not be asked"))
	env := fake.ClaudeEnv(t.TempDir())
	delete(env, "ANTHROPIC_API_KEY")
	prov := claude.New(slog.New(slog.NewTextHandler(t.Output(), nil)), claude.Options{
		Bin: bin, Env: env, InterruptTimeout: 5 * time.Second,
		HostEnv: func() []string { return []string{"PATH=" + os.Getenv("PATH")} },
	})
	r := providertest.Run(t, prov, agent.RunRequest{Prompt: "hello", Cwd: t.TempDir()}, nil)
	if !errors.Is(r.Err, agent.ErrRunFailed) {
		t.Fatalf("Run = %v, want ErrRunFailed", r.Err)
	}
	last := r.Last()
	if last.Type != agent.EventRunFailed || !strings.HasPrefix(last.Text, claude.NotSignedInHint) || !strings.Contains(last.Text, "Not logged in") {
		t.Errorf("last event %s %q, want the sign-in hint", last.Type, last.Text)
	}
	if n := len(fake.MessageRequests()); n != 0 {
		t.Errorf("the CLI called the API %d times without a key", n)
	}
}
