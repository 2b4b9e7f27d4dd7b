// Tests of SIGHUP's config reload: in process (what is swapped, what needs a
// restart, refusal, the redactor, concurrent readers) and on a real serve
// process behind the Slack fake with a scripted agent run in flight.

package main

import (
	"bufio"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/configs"
)

// writeConfigMap writes v as the config file at path.
func writeConfigMap(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestReloadSwapsRulesAgentsAndDefaults reloads an app in process while
// other goroutines check access and look agents up (run with -race): the
// channel rules, admins, agents and defaults of the new file are in force,
// database, listener and token changes are reported as needing a restart and
// kept, the new secrets are redacted and never logged, and an invalid file
// changes nothing.
func TestReloadSwapsRulesAgentsAndDefaults(t *testing.T) {
	dir := isolate(t)
	path := filepath.Join(dir, "threadline.yaml")
	const secret, token = "sk-reload-0123456789abcdef", "xoxb-reloaded-bot-token-0987"
	conf := func(allow []string, extra func(m map[string]any)) map[string]any {
		m := map[string]any{
			"database": map[string]any{"url": filepath.Join(dir, "tl.db")},
			"http":     map[string]any{"listen": "127.0.0.1:38790"},
			"defaults": map[string]any{"agent": "claude"},
			"agents":   map[string]any{"claude": map[string]any{"bin": "/nonexistent/claude"}},
			"slack": map[string]any{"app_token": slacktest.AppToken, "bot_token": slacktest.BotToken,
				"channels": map[string]any{"C1": map[string]any{"allow": allow}}},
			"matrix": map[string]any{"homeserver": "http://127.0.0.1:1", "user_id": "@bot:example.org", "access_token": "mx-token-1",
				"rooms": map[string]any{"!r:example.org": map[string]any{"allow": []string{"@a:example.org"}}}},
		}
		if extra != nil {
			extra(m)
		}
		return m
	}
	writeConfigMap(t, path, conf([]string{"U1"}, nil))
	cfg, err := configs.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	log := newLogger(&logs, slog.LevelInfo, cfg)
	a, err := openApp(t.Context(), cfg, log, agent.ApprovalAsk)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	policy := a.desk().Policy()
	c1 := chatops.Place{Platform: "slack", Workspace: slacktest.TeamID, Channel: "C1"}
	u := func(id string) chatops.User { return chatops.User{Platform: "slack", ID: id} }
	if !policy.Allowed(u("U1"), c1, chatops.ActRun) || policy.Allowed(u("U2"), c1, chatops.ActRun) {
		t.Fatal("the start's rules are not in force")
	}
	if _, _, err := a.prompt.Provider("mine"); err == nil {
		t.Fatal("agent mine is known before the reload")
	}

	// Readers race the reloads below.
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for range 4 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				policy.Allowed(u("U2"), c1, chatops.ActApprove)
				_ = policy.Channel(c1).Agent
				_ = a.AgentIDs()
				_, _, _ = a.prompt.Provider("mine")
				_, _, _ = a.launch("mine")
			}
		})
	}
	v2 := conf([]string{"U1", "U2"}, func(m map[string]any) {
		m["database"] = map[string]any{"url": filepath.Join(dir, "other.db")}
		m["http"] = map[string]any{"listen": "127.0.0.1:38791"}
		m["access"] = map[string]any{"admins": []string{"slack:UADMIN"}}
		m["defaults"] = map[string]any{"agent": "codex"}
		m["agents"] = map[string]any{
			"claude": map[string]any{"bin": "/nonexistent/claude", "env": map[string]string{"EXTRA_API_KEY": secret}},
			"mine":   map[string]any{"base": "claude", "model": "opus"},
		}
		m["slack"].(map[string]any)["bot_token"] = token
		delete(m, "matrix") // removing a front-end needs a restart
	})
	writeConfigMap(t, path, v2)
	var res configs.Reload
	for i := range 5 { // back and forth, the last one to v2
		if i%2 == 1 {
			writeConfigMap(t, path, conf([]string{"U1"}, nil))
		} else {
			writeConfigMap(t, path, v2)
		}
		if res, err = a.reloads().Reload(t.Context(), ""); err != nil {
			t.Fatalf("reload %d: %v\n%s", i, err, logs.String())
		}
	}
	close(stop)
	readers.Wait()
	t.Logf("reload took %s", res.Took)

	for _, k := range []string{"access.admins", "defaults.agent", "agents.claude.env.EXTRA_API_KEY", "agents.mine", "slack.channels.C1.allow"} {
		if !slices.Contains(res.Applied, k) {
			t.Errorf("applied %v: no %s", res.Applied, k)
		}
	}
	for _, k := range []string{"database.url", "http.listen", "slack.bot_token", "matrix"} {
		if !slices.Contains(res.Restart, k) {
			t.Errorf("needs restart %v: no %s", res.Restart, k)
		}
		if slices.Contains(res.Applied, k) {
			t.Errorf("%s was applied", k)
		}
	}
	if !policy.Allowed(u("U2"), c1, chatops.ActRun) || !policy.Allowed(u("UADMIN"), c1, chatops.ActApprove) {
		t.Error("the new channel rules or admins are not in force")
	}
	if got := policy.Channel(chatops.Place{Platform: "slack", Channel: "C9"}).Agent; got != "codex" {
		t.Errorf("the default agent of a new chat is %q, want codex", got)
	}
	room := chatops.Place{Platform: "matrix", Channel: "!r:example.org"}
	if !policy.Allowed(chatops.User{Platform: "matrix", ID: "@a:example.org"}, room, chatops.ActRun) {
		t.Error("the running Matrix front-end lost its room rules though removing it needs a restart")
	}
	if _, c, err := a.prompt.Provider("mine"); err != nil || c.Model != "opus" || c.Provider != "claude" {
		t.Errorf("agent mine after the reload: %+v %v", c, err)
	}
	if _, c, _ := a.prompt.Provider("claude"); c.Env["EXTRA_API_KEY"] != secret {
		t.Error("claude's new env is not what the next run gets")
	}
	if !slices.Contains(a.AgentIDs(), "mine") {
		t.Error("AgentIDs does not list the new profile")
	}
	if a.cfg.Database.URL != filepath.Join(dir, "tl.db") || a.cfg.Slack.BotToken != slacktest.BotToken {
		t.Error("a setting that needs a restart changed")
	}
	if got := a.redactor.String("key " + secret + " token " + token); strings.Contains(got, secret) || strings.Contains(got, token) {
		t.Errorf("the new secrets are not redacted: %q", got)
	}
	out := logs.String()
	if strings.Contains(out, secret) || strings.Contains(out, token) || strings.Contains(out, "U2") {
		t.Errorf("the log shows a value:\n%s", out)
	}
	if !strings.Contains(out, "config reloaded") || !strings.Contains(out, "slack.channels.C1.allow") || !strings.Contains(out, "needs_restart") {
		t.Errorf("the log does not say what changed:\n%s", out)
	}

	// Invalid files are refused with their exact error; nothing changes.
	for _, bad := range []string{
		"slack: {channels: {C1: {agents: [\"--x\"]}}}\n",
		"agents: {x: {base: x}}\n",
		"slack: [unclosed\n",
	} {
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		_, want := configs.Load(path)
		if want == nil {
			t.Fatalf("%q loads", bad)
		}
		_, err := a.reloads().Reload(t.Context(), "")
		if err == nil || err.Error() != want.Error() {
			t.Errorf("%q: reload %v, want %v", bad, err, want)
		}
		if !strings.Contains(logs.String(), "config reload refused") || !strings.Contains(logs.String(), strconv.Quote(want.Error())) {
			t.Errorf("the refusal of %q is not logged with its error:\n%s", bad, logs.String())
		}
		if !policy.Allowed(u("U2"), c1, chatops.ActRun) || policy.Allowed(u("U3"), c1, chatops.ActRun) {
			t.Fatalf("the rules changed after refusing %q", bad)
		}
		if _, _, err := a.prompt.Provider("mine"); err != nil {
			t.Fatalf("agent mine is gone after refusing %q", bad)
		}
	}
}

// TestServeReloadsOnSIGHUP sends SIGHUP, as `systemctl reload` does with the
// unit's ExecReload, to a real `threadline serve` process behind the Slack
// fake while a scripted agent run waits on an approval: a user the old file
// refused may now run in the channel, the waiting run is untouched and
// completes once approved, the log names the changed keys (no values), an
// invalid file is refused with its error and the rules stay, and serve
// never exits on SIGHUP (SIGTERM ends it cleanly afterwards).
func TestServeReloadsOnSIGHUP(t *testing.T) {
	dir := isolate(t)
	relays, err := os.MkdirTemp("", "tlh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killRelays(relays); os.RemoveAll(relays) })
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	fake := slacktest.New(t)
	const secret = "sk-reload-0123456789abcdef"
	path := filepath.Join(dir, "threadline.yaml")
	conf := func(allow []string, extra func(slack, c1 map[string]any)) map[string]any {
		c1 := map[string]any{"agent": "claude", "allow": allow, "approvers": []string{"ULEAD"}}
		// The bot token comes from the environment, as the unit advises:
		// serve takes it out of its environment after loading, and a
		// reload expands it to the start's value.
		slack := map[string]any{"app_token": slacktest.AppToken, "bot_token": "${TL_RELOAD_BOT_TOKEN}", "api_url": fake.APIURL(),
			"channels": map[string]any{"C1": c1}}
		env := map[string]string{testRoleEnv: "fakeclaude"}
		if extra != nil {
			extra(slack, c1)
			env["EXTRA_API_KEY"] = secret
		}
		return map[string]any{
			"database": map[string]any{"url": filepath.Join(dir, "tl.db")},
			"host":     map[string]any{"isolation": "off"},
			"http":     map[string]any{"listen": "127.0.0.1:0"},
			"workdir":  filepath.Join(dir, "work"),
			"agents":   map[string]any{"claude": map[string]any{"bin": exe, "env": env}},
			"slack":    slack,
		}
	}
	writeConfigMap(t, path, conf([]string{"UDEV"}, nil))

	bot := exec.Command(exe, "serve", "--config", path)
	bot.Env = append(os.Environ(), testRoleEnv+"=cli", "THREADLINE_RELAY_DIR="+relays, "TL_RELOAD_BOT_TOKEN="+slacktest.BotToken)
	var logs lockedLog
	bot.Stderr = &logs
	if err := bot.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- bot.Wait() }()
	t.Cleanup(func() {
		if bot.ProcessState == nil {
			_ = bot.Process.Kill()
			<-exited
		}
	})
	alive := func(when string) {
		t.Helper()
		select {
		case err := <-exited:
			t.Fatalf("serve exited %s: %v\n%s", when, err, logs.String())
		default:
		}
	}
	if err := fake.WaitConnected(30 * time.Second); err != nil {
		t.Fatalf("%v\n%s", err, logs.String())
	}
	events := 0
	send := func(typ string, payload map[string]any) {
		t.Helper()
		events++
		if typ == "events_api" {
			payload = map[string]any{"type": "event_callback", "team_id": slacktest.TeamID, "api_app_id": slacktest.AppID,
				"event_id": "Ev" + strconv.Itoa(events), "event_time": time.Now().Unix(), "event": payload}
		}
		env, err := fake.Envelope(typ, payload, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fake.WaitAck(env, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	mention := func(user, text string) string {
		ts := fake.PostUserMessage("C1", "", text)
		send("events_api", map[string]any{"type": "app_mention", "user": user, "channel": "C1", "ts": ts, "event_ts": ts,
			"text": "<@" + slacktest.BotUserID + "> " + text})
		return ts
	}
	refused := func(user string) bool {
		for _, c := range fake.Calls("chat.postEphemeral") {
			if c.Form.Get("user") == user && strings.Contains(c.Form.Get("text")+c.Form.Get("blocks"), "not allowed") {
				return true
			}
		}
		return false
	}
	inThread := func(root, text string) bool {
		for _, m := range fake.Thread("C1", root) {
			if strings.Contains(string(m.Blocks)+m.Markdown, text) {
				return true
			}
		}
		return false
	}
	answered := func(what, root string) {
		t.Helper()
		chatopstest.WaitFor(t, what, func() bool { return inThread(root, "Done in") && inThread(root, "chunk 120") })
	}

	// A run waits on an approval; UNEW is refused.
	asking := mention("UDEV", "ASK before the reload")
	var card slacktest.Message
	chatopstest.WaitFor(t, "the approval card", func() bool {
		for _, m := range fake.Thread("C1", asking) {
			if strings.Contains(string(m.Blocks), "tl_approve") {
				card = m
				return true
			}
		}
		return false
	})
	mention("UNEW", "hello before the reload")
	chatopstest.WaitFor(t, "UNEW refused", func() bool { return refused("UNEW") })

	// SIGHUP with UNEW allowed, a new agent secret, and two settings that
	// need a restart.
	writeConfigMap(t, path, conf([]string{"UDEV", "UNEW"}, func(slack, _ map[string]any) {
		slack["signing_secret"] = "reload-signing-secret-value"
		slack["streaming"] = "off"
	}))
	hup := func() {
		t.Helper()
		if err := bot.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	hup()
	chatopstest.WaitFor(t, "the reload log", func() bool { return strings.Contains(logs.String(), "config reloaded") })
	alive("on SIGHUP")
	out := logs.String()
	for _, k := range []string{"slack.channels.C1.allow", "agents.claude.env.EXTRA_API_KEY", "needs_restart", "slack.signing_secret", "slack.streaming"} {
		if !strings.Contains(out, k) {
			t.Errorf("the reload log does not name %s:\n%s", k, out)
		}
	}
	if strings.Contains(out, secret) || strings.Contains(out, "reload-signing-secret-value") {
		t.Errorf("the log shows a value:\n%s", out)
	}
	if m := regexp.MustCompile(`.*config reload.*`).FindAllString(out, -1); len(m) != 2 {
		t.Errorf("want two reload lines (needs restart, reloaded):\n%s", out)
	} else {
		t.Logf("the reload's log:\n%s", strings.Join(m, "\n"))
	}
	if inThread(asking, "Done in") {
		t.Fatal("the waiting run ended on SIGHUP")
	}

	// The run in flight completes when approved; UNEW may run now.
	approve := ""
	for _, b := range strings.Split(string(card.Blocks), `"action_id":"tl_approve","value":"`)[1:] {
		approve = b[:strings.IndexByte(b, '"')]
		break
	}
	send("interactive", map[string]any{
		"type": "block_actions", "team": map[string]any{"id": slacktest.TeamID}, "user": map[string]any{"id": "ULEAD"},
		"trigger_id": fake.NewTrigger(),
		"container":  map[string]any{"type": "message", "message_ts": card.TS, "channel_id": "C1", "thread_ts": asking},
		"channel":    map[string]any{"id": "C1"},
		"actions":    []map[string]any{{"action_id": "tl_approve", "block_id": "tl_actions", "value": approve, "type": "button"}},
	})
	answered("the run started before the reload", asking)
	answered("UNEW's run", mention("UNEW", "hello after the reload"))

	// An invalid file: refused with its exact error, the rules in force stay.
	bad := []byte("slack:\n  channels:\n    C1: {agents: [\"--x\"], allow: [UDEV]}\n")
	if err := os.WriteFile(path, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	_, want := configs.Load(path)
	if want == nil {
		t.Fatal("the invalid file loads")
	}
	hup()
	chatopstest.WaitFor(t, "the refusal log", func() bool { return strings.Contains(logs.String(), "config reload refused") })
	if !strings.Contains(logs.String(), strconv.Quote(want.Error())) {
		t.Errorf("the refusal does not log %q:\n%s", want, logs.String())
	}
	alive("on a refused SIGHUP")
	answered("UNEW's run after the refusal", mention("UNEW", "hello after the refusal"))
	mention("UOTHER", "hello")
	chatopstest.WaitFor(t, "UOTHER refused", func() bool { return refused("UOTHER") })

	// Still the same process: SIGTERM ends it cleanly.
	if err := bot.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("serve exited with %v after SIGTERM:\n%s", err, logs.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("serve did not stop:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "shutdown complete") {
		t.Errorf("no clean shutdown:\n%s", logs.String())
	}
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		if strings.Contains(sc.Text(), "level=ERROR") && !strings.Contains(sc.Text(), "config reload refused") {
			t.Errorf("unexpected error: %s", sc.Text())
		}
	}
}
