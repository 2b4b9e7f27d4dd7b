package execution

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/agentcore/procrun/procruntest"
	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/agentcore/sandbox"
)

func init() {
	if len(os.Args) > 1 && os.Args[1] == "sandbox" { // the helper: this test binary, as threadline sandbox
		err := sandbox.Exec(os.Args[2:], os.Environ())
		fmt.Fprintln(os.Stderr, err)
		os.Exit(126)
	}
}

// sandboxFixture is two chats' working directories, the bot's private
// directory, a shared home and a Sandboxing over them, run as the agent
// user.
type sandboxFixture struct {
	iso                *procrun.Isolation
	sb                 *Sandboxing
	workA, workB, bot  string
	shared, stateRoot  string
	secretB, botSecret string
}

func newSandboxFixture(t *testing.T) *sandboxFixture {
	t.Helper()
	if ok, why := sandbox.Available(); !ok {
		t.Skip(why)
	}
	u := procruntest.NeedAgentUser(t)
	iso, err := procrun.NewIsolation(u.Username)
	if err != nil {
		t.Fatal(err)
	}
	base := procruntest.TraversableDir(t, "tlexec")
	f := &sandboxFixture{iso: iso, bot: filepath.Join(base, "bot"), shared: filepath.Join(base, "shared"), stateRoot: filepath.Join(base, "agents")}
	root := filepath.Join(base, "work")
	f.workA, f.workB = filepath.Join(root, "chat-a"), filepath.Join(root, "chat-b")
	for _, d := range []string{f.workA, f.workB, f.bot, filepath.Join(f.shared, ".fake")} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range []string{f.workA, f.workB} {
		if err := PrepareWorkdir(root, w, iso); err != nil {
			t.Fatal(err)
		}
	}
	// What the agent user could read were it not for the sandbox: the other
	// chat's file (its own uid's), the bot's (world-readable by mistake).
	f.secretB, f.botSecret = filepath.Join(f.workB, "secret.txt"), filepath.Join(f.bot, "threadline.db")
	write := func(p, s string, mode os.FileMode) {
		if err := os.WriteFile(p, []byte(s), mode); err != nil {
			t.Fatal(err)
		}
	}
	write(f.secretB, "chat-b-private", 0o600)
	if err := os.Chown(f.secretB, int(iso.UID), int(iso.GID)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(f.bot, 0o755); err != nil {
		t.Fatal(err)
	}
	write(f.botSecret, "bot-database", 0o644)
	write(filepath.Join(f.shared, ".fake", "token"), "shared-login", 0o600)
	write(filepath.Join(f.shared, ".fake", "config.json"), `{"model":"m"}`, 0o600)
	f.sb = &Sandboxing{
		Helper:    []string{procruntest.SharedExecutable(t, "threadline"), "sandbox"},
		StateRoot: f.stateRoot,
		Forbidden: []string{f.bot},
		Agents: map[agent.ProviderID]AgentState{"fake": {
			Spec: registry.StateSpec{Env: map[string]string{"FAKE_HOME": ".fake"}, Shared: []string{"${FAKE_HOME}/config.json", "${FAKE_HOME}/settings.json"}},
			Auth: []string{"~/.fake/token"},
		}},
	}
	return f
}

// run runs script with sh as chat key's sandboxed agent in cwd and returns
// its output.
func (f *sandboxFixture) run(t *testing.T, key, cwd, script string) string {
	t.Helper()
	c, err := f.sb.Confine("fake", key, cwd, nil, map[string]string{"HOME": f.shared}, f.iso)
	if err != nil {
		t.Fatal(err)
	}
	sb := c.Sandbox
	var kv []string
	for k, v := range c.Env {
		kv = append(kv, k+"="+v)
	}
	kv = append(kv, "PATH=/usr/bin:/bin")
	ctx := procrun.WithSandbox(procrun.WithIsolation(context.Background(), f.iso), sb)
	p, err := procrun.Start(ctx, nil, procrun.Spec{Bin: "/bin/sh", Args: []string{"-c", script}, Dir: cwd, Env: kv})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := p.Each(func(line []byte) error { out.Write(line); out.WriteByte('\n'); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(); err != nil {
		t.Fatalf("sandboxed sh: %v\n%s", err, out.String())
	}
	return out.String()
}

// TestSandboxConfinesChat: a sandboxed run writes its own workspace, its
// HOME and TMPDIR (its chat's agent state, with copies of the shared login
// and config at the CLI's state switch), and reaches neither the other
// chat's workspace, nor the bot's files, nor the shared originals.
func TestSandboxConfinesChat(t *testing.T) {
	f := newSandboxFixture(t)
	try := func(name, cmd string) string {
		return fmt.Sprintf(`if %s >/dev/null 2>&1; then echo "%s yes"; else echo "%s no"; fi; `, cmd, name, name)
	}
	script := try("write-own", "echo hi > ok.txt") +
		try("write-tmp", `mkdir "$TMPDIR/x"`) +
		try("write-home", `echo s > "$HOME/session"`) +
		try("read-login", `grep -q shared-login "$HOME/.fake/token"`) +
		try("read-config", `grep -q model "$FAKE_HOME/config.json"`) +
		try("read-other", "cat "+f.secretB) +
		try("write-other", "echo x > "+filepath.Join(f.workB, "x")) +
		try("read-bot", "cat "+f.botSecret) +
		try("read-shared", "cat "+filepath.Join(f.shared, ".fake", "token")) +
		try("read-etc", "cat /etc/hostname")
	out := f.run(t, "chat-a", f.workA, script)
	want := "write-own yes\nwrite-tmp yes\nwrite-home yes\nread-login yes\nread-config yes\nread-other no\nwrite-other no\nread-bot no\nread-shared no\nread-etc yes\n"
	if out != want {
		t.Errorf("sandboxed run:\n%s\nwant:\n%s", out, want)
	}
	// The same agent user outside the sandbox reaches what it refused.
	if _, err := os.ReadFile(f.secretB); err != nil {
		t.Fatal(err)
	}
}

// TestSandboxStateIsPerChat: a tool that plants a link in its home where a
// shared file is copied (to the bot's database) does not get the bot's file
// written; chat B's home is not chat A's; the copies are fresh each run.
func TestSandboxStateIsPerChat(t *testing.T) {
	f := newSandboxFixture(t)
	f.run(t, "chat-a", f.workA, `echo a > "$HOME/session"; rm -f "$HOME/.fake/token"; ln -s `+f.botSecret+` "$HOME/.fake/token"; echo changed > "$FAKE_HOME/config.json"`)
	out := f.run(t, "chat-a", f.workA, `cat "$HOME/session" "$HOME/.fake/token"; echo; cat "$FAKE_HOME/config.json"; echo; if test -L "$HOME/.fake/token"; then echo LINK; fi`)
	if out != "a\nshared-login\n{\"model\":\"m\"}\n" {
		t.Errorf("chat A's second run saw:\n%s", out)
	}
	if b, _ := os.ReadFile(f.botSecret); string(b) != "bot-database" {
		t.Errorf("the bot's file was written through a planted link: %q", b)
	}
	// A shared file the operator has not set up: what the agent writes there
	// does not outlive its run (the chat's settings mirror the operator's).
	f.run(t, "chat-a", f.workA, `echo '{"hooks":"evil"}' > "$FAKE_HOME/settings.json"`)
	out = f.run(t, "chat-a", f.workA, `cat "$FAKE_HOME/settings.json" 2>/dev/null || echo absent`)
	if out != "absent\n" {
		t.Errorf("an agent-written settings file persisted: %q", out)
	}
	out = f.run(t, "chat-b", f.workB, `cat "$HOME/session" 2>&1 || echo none; ls `+filepath.Join(f.stateRoot, "chat-a")+` 2>&1 >/dev/null || echo denied`)
	if !strings.Contains(out, "none") || !strings.Contains(out, "denied") {
		t.Errorf("chat B saw chat A's state:\n%s", out)
	}
}
