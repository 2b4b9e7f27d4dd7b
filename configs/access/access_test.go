// The per-channel agents, projects and requester_only settings as the
// front desk's policy, and their validation.

package access

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/configs"
)

func TestChannelLimitsConfig(t *testing.T) {
	cfg, err := configs.Load(writeConfig(t, `slack:
  bot_token: xoxb-1
  app_token: xapp-1-abc
  workspace: {allow: ["*"], requester_only: true}
  channels:
    C1: {agent: claude, agents: [claude, codex], projects: [web], allow: [U1], approvers: [U1]}
matrix:
  homeserver: http://127.0.0.1:8008
  user_id: "@bot:example.org"
  access_token: t
  rooms:
    "!r:example.org": {agents: [opencode], projects: [api], requester_only: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	p := Policy(cfg, cfg.Defaults.Agent)
	r := p.Channel(chatops.Place{Platform: "slack", Workspace: "T1", Channel: "C1"})
	if strings.Join(r.Agents, ",") != "claude,codex" || strings.Join(r.Projects, ",") != "web" || !r.RequesterOnly || r.Agent != "claude" {
		t.Errorf("slack C1 rules %+v", r)
	}
	if !p.Allowed(chatops.User{Platform: "slack", ID: "U1"}, chatops.Place{Platform: "slack", Channel: "C1"}, chatops.ActConfigure) {
		t.Error("the channel's approver may not configure")
	}
	m := p.Channel(chatops.Place{Platform: "matrix", Channel: "!r:example.org"})
	if strings.Join(m.Agents, ",") != "opencode" || strings.Join(m.Projects, ",") != "api" || !m.RequesterOnly {
		t.Errorf("matrix room rules %+v", m)
	}
	for body, want := range map[string]string{
		"slack: {bot_token: x, app_token: y, channels: {C1: {agent: claude, agents: [codex]}}}\n": `the default agent "claude" is not in its agents list`,
		"slack: {bot_token: x, app_token: y, channels: {C1: {project: web, projects: [api]}}}\n":  `the default project "web" is not in its projects list`,
		"slack: {bot_token: x, app_token: y, channels: {C1: {agents: [\"--auto\"]}}}\n":           "slack.channels.C1.agents: invalid value",
		"slack: {bot_token: x, app_token: y, workspace: {projects: [\"a b\"]}}\n":                 "slack.workspace.projects: invalid value",
	} {
		if _, err := configs.Load(writeConfig(t, body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "threadline.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestThreadContextConfig: thread_context off in a channel, the workspace
// or a room reaches the policy; the most specific setting wins.
func TestThreadContextConfig(t *testing.T) {
	cfg, err := configs.Load(writeConfig(t, `slack:
  bot_token: xoxb-1
  app_token: xapp-1-abc
  workspace: {thread_context: off}
  channels:
    C1: {thread_context: on}
    C2: {allow: [U1]}
matrix:
  homeserver: http://127.0.0.1:8008
  user_id: "@bot:example.org"
  access_token: t
  rooms:
    "!off:example.org": {thread_context: off}
    "!on:example.org": {allow: ["@a:example.org"]}
`))
	if err != nil {
		t.Fatal(err)
	}
	p := Policy(cfg, cfg.Defaults.Agent)
	for place, want := range map[chatops.Place]string{
		{Platform: "slack", Workspace: "T1", Channel: "C1"}:    "on",
		{Platform: "slack", Workspace: "T1", Channel: "C2"}:    "off",
		{Platform: "slack", Workspace: "T1", Channel: "C3"}:    "off",
		{Platform: "matrix", Channel: "!off:example.org"}:      "off",
		{Platform: "matrix", Channel: "!on:example.org"}:       "",
		{Platform: "matrix", Channel: "!unlisted:example.org"}: "",
	} {
		if got := p.Channel(place).ThreadContext; got != want {
			t.Errorf("%s: thread_context %q, want %q", place, got, want)
		}
	}
}
