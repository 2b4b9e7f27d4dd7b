package main

import (
	"bytes"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/threadline-bot/threadline/providers/claude/fakeapi"
	"github.com/threadline-bot/threadline/providers/providertest"
)

// ordinaryUser is the user TestOrdinaryUserRun runs threadline as: not
// root, no capability, not the agent user.
const ordinaryUser = "threadline-tester"

// TestOrdinaryUserRun: `threadline run` started by an ordinary user (no
// capability to switch users) runs the real Claude CLI as that user inside
// the sandbox: an approved tool writes a file in the user's own directory,
// and cannot read the user's private files outside it (a key in ~/.ssh) nor
// write the user's home.
func TestOrdinaryUserRun(t *testing.T) {
	if !providertest.InNetns(t) {
		return
	}
	bin := fakeapi.FindClaude(t)
	u, err := user.Lookup(ordinaryUser)
	if err != nil {
		if out, err := exec.Command("useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", ordinaryUser).CombinedOutput(); err != nil {
			t.Fatalf("useradd %s: %v: %s", ordinaryUser, err, out)
		}
		if u, err = user.Lookup(ordinaryUser); err != nil {
			t.Fatal(err)
		}
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	base, err := os.MkdirTemp("", "tlord")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o711); err != nil {
		t.Fatal(err)
	}
	home, project := filepath.Join(base, "home"), filepath.Join(base, "home", "project")
	for _, d := range []string{home, filepath.Join(home, ".ssh"), project} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	key := filepath.Join(home, ".ssh", "id_ed25519")
	if err := os.WriteFile(key, []byte("PRIVATE-KEY-OF-THE-USER"), 0o600); err != nil {
		t.Fatal(err)
	}
	probe := "echo written > made-by-tool.txt; { cat " + key + "; echo planted > " + filepath.Join(home, ".profile") + "; } > probe.txt 2>&1; echo probed"
	api := fakeapi.New(t,
		fakeapi.When("TOOL", fakeapi.ToolUse("Bash", map[string]any{"command": probe, "description": "Write and look around"})),
		fakeapi.Text("Done."),
	)
	env := api.ClaudeEnv(filepath.Join(home, "claude"))
	delete(env, "HOME") // the user's own
	raw, _ := yaml.Marshal(map[string]any{
		"database": map[string]any{"url": filepath.Join(home, "tl.db")},
		"agents":   map[string]any{"claude": map[string]any{"bin": bin, "env": env}},
	})
	cfg := filepath.Join(home, "threadline.yaml")
	if err := os.WriteFile(cfg, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	chownTree(t, home, u)
	cmd := exec.Command(sandboxHelper, "run", "--config", cfg, "--agent", "claude", "--interactions", "accept", "TOOL write a file")
	cmd.Dir = project
	cmd.Env = []string{testRoleEnv + "=cli", testHelperEnv + "=" + sandboxHelper, "HOME=" + home, "USER=" + ordinaryUser, "PATH=/usr/local/bin:/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("run as %s: %v\nstdout: %s\nstderr: %s", ordinaryUser, err, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "host agents run as the bot's own user in a sandbox") {
		t.Errorf("no line saying what the agent may touch:\n%s", stderr.String())
	}
	made := filepath.Join(project, "made-by-tool.txt")
	fi, err := os.Stat(made)
	if err != nil {
		t.Fatalf("the approved tool wrote no file in the user's directory: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != uid {
		t.Errorf("%s belongs to uid %d, want %d (the user)", made, st.Uid, uid)
	}
	b, err := os.ReadFile(filepath.Join(project, "probe.txt"))
	if err != nil {
		t.Fatal(err)
	}
	probed := string(b)
	// bash says "Permission denied", zsh (Claude's Bash tool prefers it when
	// installed) "permission denied".
	if strings.Contains(probed, "PRIVATE-KEY-OF-THE-USER") || strings.Count(strings.ToLower(probed), "permission denied") != 2 {
		t.Errorf("the sandboxed tool, as the user, reached the user's key or home:\n%s", probed)
	}
	if b, err := os.ReadFile(filepath.Join(home, ".profile")); err == nil {
		t.Errorf("the sandboxed tool wrote the user's ~/.profile: %q", b)
	}
}
