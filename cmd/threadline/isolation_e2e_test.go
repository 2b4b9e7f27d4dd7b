package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"go.yaml.in/yaml/v3"
	"golang.org/x/sys/unix"

	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/providers/claude/fakeapi"
	"github.com/threadline-bot/threadline/providers/providertest"
)

// agentUser returns the default agent user, created when missing (root
// only). Without root the test is skipped, or failed under THREADLINE_E2E=1.
func agentUser(t *testing.T) *user.User {
	t.Helper()
	if os.Geteuid() != 0 {
		providertest.SkipOrFail(t, "isolation needs root (to create and switch to %s)", defaultAgentUser)
	}
	u, err := user.Lookup(defaultAgentUser)
	if err != nil {
		if out, err := exec.Command("useradd", "--system", "--create-home", "--home-dir", "/var/lib/"+defaultAgentUser, defaultAgentUser).CombinedOutput(); err != nil {
			t.Fatalf("useradd: %v: %s", err, out)
		}
		if u, err = user.Lookup(defaultAgentUser); err != nil {
			t.Fatal(err)
		}
	}
	return u
}

// chownTree gives every file under dir to u.
func chownTree(t *testing.T, dir string, u *user.User) {
	t.Helper()
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRunIsolatedEndToEnd: `threadline run` with the REAL Claude CLI (in a
// loopback-only netns, against the scripted fake API), whose approved Bash
// tool tries to read everything of the bot's: every /proc/*/environ, the
// database, the config file, a private file and another run's relay. Run as
// the agent user, it gets none of the planted secrets, and the run works. A
// control run with host.isolation: off shows the same probe does find them.
func TestRunIsolatedEndToEnd(t *testing.T) {
	// Planted before the netns re-exec, so they are in the bot process's
	// initial environment block, the one /proc/<pid>/environ shows.
	planted := map[string]string{
		"SLACK_BOT_TOKEN":      "xoxb-planted-env-token-5eb1",
		"DATABASE_URL":         "postgres://u:planted-db-password-77@127.0.0.1:1/x",
		"TL_PLANTED_MATRIX_PW": "planted-matrix-password-c0ffee",
	}
	for k, v := range planted {
		t.Setenv(k, v)
	}
	if !providertest.InNetns(t) {
		return
	}
	agentU := agentUser(t)
	bin := fakeapi.FindClaude(t)
	dir := isolate(t)
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o711); err != nil { // t.TempDir is root's 0700
			t.Fatal(err)
		}
	}
	mkdir := func(p string, mode os.FileMode) string {
		t.Helper()
		if err := os.MkdirAll(p, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	botDir := mkdir(filepath.Join(dir, "bot"), 0o700)
	agentDir := mkdir(filepath.Join(dir, "agent"), 0o711)
	work := mkdir(filepath.Join(agentDir, "work"), 0o700)
	claudeHome := filepath.Join(agentDir, "claude")
	// A private file of the operator in a directory anyone may enter.
	private := filepath.Join(dir, "private.txt")
	const privateText = "operator-private-9d1f"
	if err := os.WriteFile(private, []byte(privateText), 0o600); err != nil {
		t.Fatal(err)
	}
	// Another run's live relay, as serve keeps them.
	t.Setenv("XDG_STATE_HOME", mkdir(filepath.Join(dir, "state"), 0o711))
	mkdir(filepath.Join(dir, "state", "threadline"), 0o711)
	relays := relayDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	other := procrun.Relay{Dir: relays, Command: []string{exe, "relay"}}
	op, err := procrun.Start(procrun.WithRelay(context.Background(), other.Run("other-run")), nil,
		procrun.Spec{Bin: "sleep", Args: []string{"600"}, Env: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = op.Kill(); _ = op.Wait() })
	otherSock := filepath.Join(other.RunDir("other-run"), "sock")
	if fi, err := os.Stat(otherSock); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("the other run's relay socket: %v %v", fi, err)
	}

	db := filepath.Join(botDir, "tl.db")
	probe := strings.Join([]string{
		"id",
		`for f in /proc/[0-9]*/environ; do echo "== $f"; tr '\0' '\n' < "$f"; done`,
		"cat /proc/" + strconv.Itoa(os.Getpid()) + "/environ",
		"cat /proc/" + strconv.Itoa(os.Getpid()) + "/mem | head -c 100",
		"cat " + db, "ls -la " + botDir, "cat " + filepath.Join(botDir, "threadline.yaml"), "cat " + private,
		"ls -la " + relays, "ls -la " + other.RunDir("other-run"), "cat " + filepath.Join(other.RunDir("other-run"), "out"),
		"test -w " + otherSock + " && echo SOCKET-WRITABLE",
	}, "; ")
	srv := fakeapi.New(t,
		fakeapi.When("TOOL", fakeapi.ToolUse("Bash", map[string]any{
			"command":     "{ " + probe + "; } > probe.txt 2>&1; echo probed",
			"description": "Look around",
		})),
		fakeapi.Text("Hello", " there."),
	)
	claudeEnv := srv.ClaudeEnv(claudeHome)
	chownTree(t, claudeHome, agentU)
	chownTree(t, work, agentU)
	configSecrets := map[string]string{
		"slack bot token":   "xoxb-planted-config-token-a1",
		"slack app token":   "xapp-planted-config-token-b2",
		"other agent's key": "sk-planted-other-agent-c3",
	}
	writeConfig := func(name, isolation string) string {
		cfg := map[string]any{
			"database": map[string]any{"url": db},
			"host":     map[string]any{"isolation": isolation},
			"agents": map[string]any{
				"claude": map[string]any{"bin": bin, "env": claudeEnv},
				"codex":  map[string]any{"env": map[string]string{"OPENAI_API_KEY": configSecrets["other agent's key"]}},
			},
			"slack":  map[string]any{"bot_token": configSecrets["slack bot token"], "app_token": configSecrets["slack app token"]},
			"matrix": map[string]any{"homeserver": "http://127.0.0.1:1", "user_id": "@tl:example.org", "password": "${TL_PLANTED_MATRIX_PW}"},
		}
		raw, _ := yaml.Marshal(cfg)
		p := filepath.Join(botDir, name)
		if err := os.WriteFile(p, raw, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfgPath := writeConfig("threadline.yaml", "auto")

	runProbe := func(t *testing.T, cfgPath string) (string, string) {
		t.Helper()
		os.Remove(filepath.Join(work, "probe.txt"))
		t.Setenv("TL_PLANTED_MATRIX_PW", planted["TL_PLANTED_MATRIX_PW"]) // unset by the previous run
		code, out, errOut, err := run(t, "", "run", "--config", cfgPath, "--cwd", work, "--interactions", "accept", "--events", "jsonl", "TOOL probe")
		if code != 0 || err != nil {
			t.Fatalf("run: exit %d err %v\nstderr: %s\nstdout: %s", code, err, errOut, out)
		}
		var text strings.Builder
		var started, completed bool
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var ev struct{ Type, Text string }
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("not JSON: %q", line)
			}
			started = started || ev.Type == "tool.started"
			completed = completed || ev.Type == "tool.completed"
			if ev.Type == "assistant.delta" {
				text.WriteString(ev.Text)
			}
		}
		if !started || !completed || !strings.Contains(text.String(), "Tool result: probed") {
			t.Fatalf("the tool did not run or the answer did not stream (text %q):\n%s", text.String(), out)
		}
		b, err := os.ReadFile(filepath.Join(work, "probe.txt"))
		if err != nil {
			t.Fatalf("the tool wrote no probe.txt: %v", err)
		}
		return string(b), errOut
	}
	leaks := func(probe string) []string {
		var found []string
		for k, v := range planted {
			if k == "DATABASE_URL" {
				v = "planted-db-password-77"
			}
			if strings.Contains(probe, v) {
				found = append(found, "env "+k)
			}
		}
		for k, v := range configSecrets {
			if strings.Contains(probe, v) {
				found = append(found, "config "+k)
			}
		}
		if strings.Contains(probe, privateText) {
			found = append(found, "private file")
		}
		if strings.Contains(probe, "SQLite format") {
			found = append(found, "database")
		}
		if strings.Contains(probe, "SOCKET-WRITABLE") || strings.Contains(probe, "meta.json") {
			found = append(found, "relay")
		}
		return found
	}

	t.Run("isolated", func(t *testing.T) {
		probe, errOut := runProbe(t, cfgPath)
		if !strings.Contains(probe, "uid="+agentU.Uid+"("+defaultAgentUser+")") {
			t.Errorf("the tool did not run as %s:\n%s", defaultAgentUser, probe)
		}
		if found := leaks(probe); len(found) > 0 {
			t.Errorf("the agent's tool reached %v:\n%s", found, probe)
		}
		for _, want := range []string{
			"cat: " + db + ": Permission denied", "cat: " + private + ": Permission denied",
			"cat: " + filepath.Join(botDir, "threadline.yaml") + ": Permission denied",
			"cannot open directory '" + relays + "': Permission denied",
			"cat: /proc/" + strconv.Itoa(os.Getpid()) + "/environ: Permission denied",
		} {
			if !strings.Contains(probe, want) {
				t.Errorf("the probe lacks %q:\n%s", want, probe)
			}
		}
		if strings.Contains(errOut, "unisolated") {
			t.Errorf("run warned about isolation while isolated: %s", errOut)
		}
		if fi, err := os.Stat(filepath.Join(work, "probe.txt")); err == nil {
			if st := fi.Sys().(*syscall.Stat_t); strconv.Itoa(int(st.Uid)) != agentU.Uid {
				t.Errorf("probe.txt is owned by uid %d", st.Uid)
			}
		}
		// The bot itself dropped the expanded secret from its environment and
		// is not dumpable.
		if _, ok := os.LookupEnv("TL_PLANTED_MATRIX_PW"); ok {
			t.Error("the bot kept TL_PLANTED_MATRIX_PW in its environment after loading the config")
		}
		if d, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0); err != nil || d != 0 {
			t.Errorf("the bot is dumpable: %d %v", d, err)
		}
	})

	t.Run("control: host.isolation off", func(t *testing.T) {
		probe, _ := runProbe(t, writeConfig("off.yaml", "off"))
		found := strings.Join(leaks(probe), ",")
		for _, want := range []string{"env SLACK_BOT_TOKEN", "env TL_PLANTED_MATRIX_PW", "config slack bot token", "private file", "database", "relay"} {
			if !strings.Contains(found, want) {
				t.Errorf("unisolated, the probe should have reached %s (found %s):\n%s", want, found, probe)
			}
		}
	})
}
