package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	"golang.org/x/sys/unix"

	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/agentcore/procrun/procruntest"
	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/configs"
	"github.com/threadline-bot/threadline/providers/claude/fakeapi"
	"github.com/threadline-bot/threadline/providers/providertest"
)

// agentUser returns the default agent user, created when missing (see
// procruntest.NeedAgentUser).
func agentUser(t *testing.T) *user.User {
	t.Helper()
	if configs.DefaultAgentUser != procruntest.AgentUser {
		t.Fatalf("the tests' agent user %s is not the default %s", procruntest.AgentUser, configs.DefaultAgentUser)
	}
	return procruntest.NeedAgentUser(t)
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
	mkdir(filepath.Join(dir, "data"), 0o711) // XDG_DATA_HOME: the agents' state is below it
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
	relays := configs.RelayDir()
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

	// auto is the sandbox on top of the uid switch here (Landlock ABI 7);
	// uid is the uid switch alone.
	for name, cfg := range map[string]string{"isolated (auto: sandbox and uid)": cfgPath, "isolated (uid only)": writeConfig("uid.yaml", "uid")} {
		t.Run(name, func(t *testing.T) {
			probe, errOut := runProbe(t, cfg)
			if !strings.Contains(probe, "uid="+agentU.Uid+"("+configs.DefaultAgentUser+")") {
				t.Errorf("the tool did not run as %s:\n%s", configs.DefaultAgentUser, probe)
			}
			if found := leaks(probe); len(found) > 0 {
				t.Errorf("the agent's tool reached %v:\n%s", found, probe)
			}
			for _, want := range []string{
				"cat: " + db + ": Permission denied", "cat: " + private + ": Permission denied",
				"cat: " + filepath.Join(botDir, "threadline.yaml") + ": Permission denied",
				"'" + relays + "': Permission denied",
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
	}

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

// TestServeIsolatedEndToEnd: `threadline serve` (fake Slack, REAL Claude CLI,
// relays, the default data directory) runs the agent as the agent user in the
// chat's own directory, handed to that user; the approved tool cannot read the
// bot's environment, database, config or relays, and the run completes.
func TestServeIsolatedEndToEnd(t *testing.T) {
	const plantedSigning = "planted-signing-secret-5a5a"
	t.Setenv("TL_PLANTED_SIGNING", plantedSigning) // in the initial environment block
	if !providertest.InNetns(t) {
		return
	}
	agentU := agentUser(t)
	bin := fakeapi.FindClaude(t)
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	// XDG_DATA_HOME: the operator's directory, which agents pass through
	// (Threadline changes no mode above its own data directory).
	if err := os.Mkdir(filepath.Join(dir, "data"), 0o711); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	state, err := os.MkdirTemp("", "tls") // short: a relay socket path has at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(state) })
	t.Setenv("XDG_STATE_HOME", state)
	data := filepath.Join(dir, "data", "threadline")
	db := filepath.Join(data, "threadline.db")
	relays := configs.RelayDir()
	probe := strings.Join([]string{
		"id", "pwd",
		"cat /proc/" + strconv.Itoa(os.Getpid()) + "/environ",
		"cat " + db, "ls " + data, "cat " + filepath.Join(dir, "threadline.yaml"), "ls " + relays,
	}, "; ")
	api := fakeapi.New(t,
		fakeapi.When("TOOL", fakeapi.ToolUse("Bash", map[string]any{"command": "{ " + probe + "; } > probe.txt 2>&1; echo probed", "description": "Look around"})),
		fakeapi.Text("Hello."),
	)
	claudeHome := filepath.Join(dir, "agent")
	claudeEnv := api.ClaudeEnv(claudeHome)
	chownTree(t, claudeHome, agentU)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fake := slacktest.New(t)
	cfg := map[string]any{
		"http":   map[string]any{"listen": freePort(t)},
		"agents": map[string]any{"claude": map[string]any{"bin": bin, "env": claudeEnv}},
		"slack": map[string]any{
			"app_token": slacktest.AppToken, "bot_token": slacktest.BotToken, "api_url": fake.APIURL(),
			"signing_secret": "${TL_PLANTED_SIGNING}",
			"channels":       map[string]any{"C1": map[string]any{"agent": "claude", "allow": []string{"UDEV"}, "approvers": []string{"UDEV"}}},
		},
	}
	raw, _ := yaml.Marshal(cfg)
	cfgPath := filepath.Join(dir, "threadline.yaml")
	if err := os.WriteFile(cfgPath, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	done := make(chan error, 1)
	go func() { done <- cmdServe(ctx, []string{"--config", cfgPath}, io.Discard, &logs) }()
	var root string
	t.Cleanup(func() {
		if t.Failed() {
			for _, m := range fake.Thread("C1", root) {
				t.Logf("slack message: %s %s", m.Blocks, m.Markdown)
			}
			t.Logf("serve's log:\n%s", logs.String())
			logs, _ := filepath.Glob(filepath.Join(relays, "*", "relay.log"))
			for _, l := range logs {
				b, _ := os.ReadFile(l)
				t.Logf("%s:\n%s", l, b)
			}
		}
	})
	if err := fake.WaitConnected(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "host agents run as "+agentU.Username+" in a sandbox") {
		t.Errorf("serve did not say agents run isolated:\n%s", logs.String())
	}
	send := func(id, typ string, payload map[string]any) {
		t.Helper()
		env, err := fake.Envelope(typ, payload, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fake.WaitAck(env, 3*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	root = fake.PostUserMessage("C1", "", "TOOL probe")
	send("Ev1", "events_api", map[string]any{"type": "event_callback", "team_id": slacktest.TeamID, "api_app_id": slacktest.AppID,
		"event_id": "Ev1", "event_time": time.Now().Unix(), "event": map[string]any{"type": "app_mention", "user": "UDEV", "channel": "C1",
			"ts": root, "event_ts": root, "text": "<@" + slacktest.BotUserID + "> TOOL probe"}})
	var card slacktest.Message
	chatopstest.WaitFor(t, "the approval card", func() bool {
		for _, x := range fake.Thread("C1", root) {
			if strings.Contains(string(x.Blocks), "tl_approve") {
				card = x
				return true
			}
		}
		return false
	})
	approve := strings.Split(strings.Split(string(card.Blocks), `"action_id":"tl_approve","value":"`)[1], `"`)[0]
	send("", "interactive", map[string]any{
		"type": "block_actions", "team": map[string]any{"id": slacktest.TeamID}, "user": map[string]any{"id": "UDEV"},
		"trigger_id": fake.NewTrigger(),
		"container":  map[string]any{"type": "message", "message_ts": card.TS, "channel_id": "C1", "thread_ts": root},
		"channel":    map[string]any{"id": "C1"},
		"actions":    []map[string]any{{"action_id": "tl_approve", "block_id": "tl_actions", "value": approve, "type": "button"}},
	})
	var answer slacktest.Message
	chatopstest.WaitFor(t, "the tool answer", func() bool {
		for _, m := range fake.Thread("C1", root) {
			if strings.Contains(string(m.Blocks), "Done in") {
				answer = m
				return true
			}
		}
		return false
	})
	if !strings.Contains(string(answer.Blocks)+answer.Markdown, "Tool result: probed") {
		t.Fatalf("tool answer: blocks %s, streamed %q\n%s", answer.Blocks, answer.Markdown, logs.String())
	}
	found, _ := filepath.Glob(filepath.Join(data, "work", "*", "probe.txt"))
	if len(found) != 1 {
		t.Fatalf("the tool did not run in the chat's own directory: %v", found)
	}
	b, _ := os.ReadFile(found[0])
	out := string(b)
	chatDir := filepath.Dir(found[0])
	if fi, err := os.Stat(chatDir); err != nil || strconv.Itoa(int(fi.Sys().(*syscall.Stat_t).Uid)) != agentU.Uid || int(fi.Sys().(*syscall.Stat_t).Gid) != os.Getegid() || fi.Mode() != os.ModeDir|os.ModeSetgid|0o770 {
		t.Errorf("the chat's directory is not the agent user's, group the bot's, mode 2770: %v %v", fi.Mode(), err)
	}
	for _, want := range []string{
		"uid=" + agentU.Uid + "(" + configs.DefaultAgentUser + ")", chatDir,
		"cat: /proc/" + strconv.Itoa(os.Getpid()) + "/environ: Permission denied",
		"cat: " + db + ": Permission denied", "cannot open directory '" + data + "': Permission denied",
		"cat: " + cfgPath + ": Permission denied", "cannot access '" + relays + "': Permission denied",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the probe lacks %q:\n%s", want, out)
		}
	}
	for _, secret := range []string{plantedSigning, slacktest.BotToken, slacktest.AppToken} {
		if strings.Contains(out, secret) {
			t.Errorf("the agent's tool read %q:\n%s", secret, out)
		}
	}
	if _, ok := os.LookupEnv("TL_PLANTED_SIGNING"); ok {
		t.Error("serve kept TL_PLANTED_SIGNING in its environment")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v\n%s", err, logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not stop\n%s", logs.String())
	}
}
