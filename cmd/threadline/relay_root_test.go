package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/procrun/procruntest"
)

// TestRelayGivesNoRoot: `threadline relay` run by an agent (as the agent
// user, from an approved tool) never starts anything as another user. The
// launch on its stdin asks for uid 0 in the old protocol's form, and its
// command line names root, the agent's own user or nothing; a copy of the
// binary carrying file capabilities (the old container image's setcap)
// refuses to run at all. The program it would start is `id -u`, whose
// output would show uid 0 in the journal.
func TestRelayGivesNoRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the relay as the agent user")
	}
	u := procruntest.NeedAgentUser(t)
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	base, err := os.MkdirTemp("", "tlroot") // t.TempDir's parent is root's 0700
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	plain := procruntest.SharedExecutable(t, "threadline")
	capped := procruntest.SharedExecutable(t, "threadline-capped")
	if out, err := exec.Command("setcap", "cap_setuid,cap_setgid,cap_chown,cap_kill=ep", capped).CombinedOutput(); err != nil {
		t.Fatalf("setcap (libcap2-bin): %v: %s", err, out)
	}
	idBin, err := exec.LookPath("id")
	if err != nil {
		t.Fatal(err)
	}
	// The launch as the old protocol carried it: a credential of uid 0.
	launch, _ := json.Marshal(map[string]any{
		"run_id": "attack", "path": idBin, "args": []string{"-u"}, "dir": "/", "env": []string{},
		"isolated": true, "cred": map[string]any{"uid": 0, "gid": 0},
	})
	for _, tc := range []struct {
		name, exe string
		args      []string
		refusal   string // in the relay's handshake; empty: it runs, as the agent
	}{
		{"file capabilities", capped, []string{"--agent-user", "root"}, "file capabilities"},
		{"file capabilities, no user", capped, nil, "file capabilities"},
		{"root named", plain, []string{"--agent-user", "root"}, "root"},
		{"own user named", plain, []string{"--agent-user", u.Username}, "the bot's own user"},
		{"isolated launch without a user", plain, nil, "needs a relay started with --agent-user"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(base, strings.ReplaceAll(tc.name, " ", "-"))
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(dir, uid, gid); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(tc.exe, append(append([]string{"relay"}, tc.args...), dir)...)
			cmd.Env = []string{"PATH=/usr/bin:/bin"}
			cmd.Stdin = bytes.NewReader(append(launch, '\n'))
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
			runErr := cmd.Run()
			hello := strings.TrimSpace(strings.SplitN(out.String(), "\n", 2)[0])
			if runErr == nil || !strings.HasPrefix(hello, "error:") || !strings.Contains(hello, tc.refusal) {
				t.Errorf("relay %v: exit %v, handshake %q, want a refusal naming %q (stderr %s)", tc.args, runErr, hello, tc.refusal, errOut.String())
			}
			if b, err := os.ReadFile(filepath.Join(dir, "out")); err == nil {
				t.Errorf("the refused relay started its program, which printed uid %q", strings.TrimSpace(string(b)))
			}
		})
	}
}
