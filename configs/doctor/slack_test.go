// checkSlack against the Slack fake, and checkAgentIDs.

package doctor

import (
	"context"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/redact"
	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/configs"
)

// findingsText is the findings as doctor prints them.
func findingsText(fs []finding) (string, int) {
	var b strings.Builder
	n := report(&b, redact.New(), fs)
	return b.String(), n
}

func TestCheckSlack(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mode     string
		refuse   map[string]string // token: error
		fail     map[string]string // method: its next error
		want     []string
		problems int
	}{
		{name: "both ok", want: []string{"ok    slack                  team Fake (" + slacktest.TeamID + ") as threadline",
			"ok    slack app token        apps.connections.open: socket mode can connect"}},
		{name: "app token refused", refuse: map[string]string{slacktest.AppToken: "invalid_auth"},
			want: []string{"ok    slack ", "FAIL  slack app token        rejected: apps.connections.open: invalid_auth", "fix: Check slack.app_token"}, problems: 1},
		{name: "app token of the wrong type", refuse: map[string]string{slacktest.AppToken: "not_allowed_token_type"},
			want: []string{"FAIL  slack app token        rejected: apps.connections.open: not_allowed_token_type"}, problems: 1},
		{name: "bot token revoked", refuse: map[string]string{slacktest.BotToken: "token_revoked"},
			want: []string{"FAIL  slack                  rejected: auth.test: token_revoked", "fix: Check slack.bot_token", "ok    slack app token"}, problems: 1},
		{name: "both refused", refuse: map[string]string{slacktest.BotToken: "invalid_auth", slacktest.AppToken: "token_revoked"},
			want: []string{"rejected: auth.test: invalid_auth", "rejected: apps.connections.open: token_revoked"}, problems: 2},
		{name: "slack's own trouble is not a refusal", fail: map[string]string{"apps.connections.open": "internal_error"},
			want: []string{"FAIL  slack app token        apps.connections.open at ", " answered internal_error; the token was not checked"}, problems: 1},
		{name: "http mode needs no app token", mode: "http", refuse: map[string]string{slacktest.AppToken: "invalid_auth"},
			want: []string{"ok    slack "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := slacktest.New(t)
			for token, e := range tc.refuse {
				fake.Refuse(token, e)
			}
			for method, e := range tc.fail {
				fake.FailNext(method, 1, e)
			}
			mode := tc.mode
			if mode == "" {
				mode = "socket"
			}
			cfg := &configs.Config{Slack: &configs.SlackConfig{Mode: mode, AppToken: slacktest.AppToken, BotToken: slacktest.BotToken, APIURL: fake.APIURL()}}
			out, problems := findingsText(checkSlack(context.Background(), cfg, nil))
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("no %q in:\n%s", w, out)
				}
			}
			if problems != tc.problems {
				t.Errorf("%d problems, want %d:\n%s", problems, tc.problems, out)
			}
			if tc.mode == "http" && (strings.Contains(out, "app token") || len(fake.Calls("apps.connections.open")) > 0) {
				t.Errorf("http mode checked the app token:\n%s", out)
			}
		})
	}
}

// idAgents is an agent table of known ids only.
type idAgents []string

func (idAgents) Probe(context.Context) ([]registry.Report, error) { return nil, nil }
func (idAgents) Definition(string) (registry.Definition, bool)    { return registry.Definition{}, false }
func (idAgents) Default() string                                  { return "" }
func (a idAgents) IDs() []string                                  { return a }

func TestCheckAgentIDs(t *testing.T) {
	known := idAgents{"claude", "codex", "gemini"}
	cfg := &configs.Config{
		Defaults: configs.DefaultsConfig{Agent: "claud"},
		Slack: &configs.SlackConfig{Workspace: configs.ChannelConfig{Agent: "codex"},
			Channels: map[string]configs.ChannelConfig{"C2": {Agent: "gemni"}, "C1": {Agent: "claude"}, "C3": {}}},
		Matrix: &configs.MatrixConfig{Rooms: map[string]configs.ChannelConfig{"!r:x": {Agent: "opencode"}}},
	}
	out, problems := findingsText(checkAgentIDs(context.Background(), cfg, known))
	for _, w := range []string{
		`FAIL  defaults.agent         unknown agent "claud"; known: claude, codex, gemini`,
		`FAIL  slack.channels.C2.agent unknown agent "gemni"; known: claude, codex, gemini`,
		`FAIL  matrix.rooms.!r:x.agent unknown agent "opencode"`,
		"fix: Set defaults.agent to one of the known ids",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("no %q in:\n%s", w, out)
		}
	}
	if problems != 3 {
		t.Errorf("%d problems, want 3:\n%s", problems, out)
	}
	cfg = &configs.Config{Defaults: configs.DefaultsConfig{Agent: "claude"}}
	if fs := checkAgentIDs(context.Background(), cfg, known); len(fs) != 0 {
		t.Errorf("a known default agent: %+v", fs)
	}
	if fs := checkAgentIDs(context.Background(), &configs.Config{Defaults: configs.DefaultsConfig{Agent: "claud"}}, idAgents(nil)); len(fs) != 0 {
		t.Errorf("no agent table (the agents check reports it), still: %+v", fs)
	}
}
