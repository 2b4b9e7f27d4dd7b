// End-to-end: the trust boundary through `threadline serve`, the Slack fake
// (Socket Mode) and the real Claude Code CLI: a non-approver cannot change a
// chat's settings, "model --auto" is refused and never reaches the run, "ok"
// does not approve while a typed "approve" does, and a chat cannot bind a
// project outside the project's access list.

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/providers/claude/fakeapi"
	"github.com/threadline-bot/threadline/providers/providertest"
)

func TestSlackTrustBoundaryEndToEnd(t *testing.T) {
	if !providertest.InNetns(t) {
		return
	}
	bin := fakeapi.FindClaude(t)
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	work := filepath.Join(dir, "work")
	api := fakeapi.New(t,
		fakeapi.When("TOOL", fakeapi.ToolUse("Bash", map[string]any{"command": "touch approved.txt && echo approved-run", "description": "Create approved.txt"})),
		fakeapi.Text("Hello", " from", " the fake", " API."),
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fake := slacktest.New(t)
	cfg := map[string]any{
		"database": map[string]any{"url": filepath.Join(dir, "tl.db")},
		"host":     map[string]any{"isolation": "off"},
		"http":     map[string]any{"listen": freePort(t)},
		"workdir":  work,
		"agents":   map[string]any{"claude": map[string]any{"bin": bin, "env": api.ClaudeEnv(filepath.Join(dir, "claude-home"))}},
		"slack": map[string]any{
			"app_token": slacktest.AppToken, "bot_token": slacktest.BotToken, "api_url": fake.APIURL(),
			"channels": map[string]any{"C1": map[string]any{
				"agent": "claude", "agents": []string{"claude"},
				"allow": []string{"UDEV", "ULEAD"}, "approvers": []string{"ULEAD"},
			}},
		},
	}
	raw, _ := yaml.Marshal(cfg)
	cfgPath := filepath.Join(dir, "threadline.yaml")
	if err := os.WriteFile(cfgPath, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	// Two projects: web is open to C1 and ULEAD, secret to another team.
	for _, args := range [][]string{
		{"project", "add", "web", "--container", "web-c", "--channels", "C1", "--allow", "ULEAD"},
		{"project", "add", "secret", "--container", "secret-c", "--channels", "C9", "--allow", "UOTHER"},
	} {
		if code, _, errs, err := run(t, "", append(args, "--config", cfgPath)...); code != 0 || err != nil {
			t.Fatalf("%v: exit %d, %v\n%s", args, code, err, errs)
		}
	}
	var logs lockedBuffer
	done := make(chan error, 1)
	go func() { done <- cmdServe(ctx, []string{"--config", cfgPath}, io.Discard, &logs) }()
	if err := fake.WaitConnected(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	events := 0
	say := func(user, thread, text string) string {
		t.Helper()
		events++
		ts := fake.PostUserMessage("C1", thread, text)
		ev := map[string]any{"type": "app_mention", "user": user, "channel": "C1", "ts": ts, "event_ts": ts,
			"text": "<@" + slacktest.BotUserID + "> " + text}
		if thread != "" {
			ev["thread_ts"] = thread
		}
		env, err := fake.Envelope("events_api", map[string]any{"type": "event_callback", "team_id": slacktest.TeamID,
			"api_app_id": slacktest.AppID, "event_id": fmt.Sprintf("EvT%d", events), "event_time": time.Now().Unix(), "event": ev}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fake.WaitAck(env, 3*time.Second); err != nil {
			t.Fatal(err)
		}
		return ts
	}
	inThread := func(root, what string) {
		t.Helper()
		chatopstest.WaitFor(t, what, func() bool {
			for _, m := range fake.Thread("C1", root) {
				if strings.Contains(m.Text+string(m.Blocks)+m.Markdown, what) {
					return true
				}
			}
			return false
		})
	}
	ephemerals := func(user string) int {
		n := 0
		for _, c := range fake.Calls("chat.postEphemeral") {
			if c.Form.Get("user") == user {
				n++
			}
		}
		return n
	}

	top := say("UDEV", "", "say hello")
	inThread(top, "Hello from the fake API.")

	// A user who may run but not approve cannot change settings.
	for i, c := range []string{"model opus", "mode plan", "agent claude", "project web"} {
		say("UDEV", top, c)
		chatopstest.WaitFor(t, "the refusal of "+c, func() bool { return ephemerals("UDEV") >= i+1 })
	}
	// An approver's "model --auto" is refused in the thread, and so is an
	// agent the channel does not list.
	say("ULEAD", top, "model --auto")
	inThread(top, "That is not a valid model; nothing was changed.")
	say("ULEAD", top, "agent codex")
	inThread(top, "This channel may use these agents: claude.")

	// The tool asks; "ok" is a prompt, not a decision; a typed approve is.
	say("ULEAD", top, "TOOL please")
	inThread(top, "touch approved.txt")
	say("ULEAD", top, "ok")
	inThread(top, "Queued (1 waiting)")
	if ran, _ := filepath.Glob(filepath.Join(work, "*", "approved.txt")); len(ran) != 0 {
		t.Fatalf("the tool ran after \"ok\": %v", ran)
	}
	say("ULEAD", top, "approve")
	inThread(top, "Tool result: approved-run")
	if ran, _ := filepath.Glob(filepath.Join(work, "*", "approved.txt")); len(ran) != 1 {
		t.Fatalf("the approved tool did not run: %v", ran)
	}
	// The queued "ok" then ran as a prompt.
	chatopstest.WaitFor(t, "the queued ok to run", func() bool {
		for _, r := range api.MessageRequests() {
			if r.Prompt() == "ok" {
				return true
			}
		}
		return false
	})
	for _, r := range api.MessageRequests() {
		if strings.Contains(r.Body.Model, "auto") {
			t.Fatalf("a run used model %q", r.Body.Model)
		}
	}

	chatopstest.WaitFor(t, "the three answers", func() bool {
		n := 0
		for _, m := range fake.Thread("C1", top) {
			if strings.Contains(string(m.Blocks), "Done in") {
				n++
			}
		}
		return n >= 3
	})

	// Projects: secret is not open to C1; web is, to ULEAD.
	say("ULEAD", top, "project secret")
	inThread(top, "Project secret is not open to this channel or to you")
	say("ULEAD", top, "project web")
	inThread(top, "project set to web for this chat.")

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
