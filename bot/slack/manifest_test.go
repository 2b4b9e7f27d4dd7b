package slack_test

import (
	"os"
	"slices"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestManifest keeps configs/slack-manifest.yaml in step with what the bot uses.
func TestManifest(t *testing.T) {
	raw, err := os.ReadFile("../../configs/slack-manifest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Features struct {
			AgentView *struct {
				Description string `yaml:"agent_description"`
				Prompts     []struct {
					Title   string `yaml:"title"`
					Message string `yaml:"message"`
				} `yaml:"suggested_prompts"`
			} `yaml:"agent_view"`
			AssistantView any `yaml:"assistant_view"`
			SlashCommands []struct {
				Command string `yaml:"command"`
				URL     string `yaml:"url"`
			} `yaml:"slash_commands"`
		} `yaml:"features"`
		OAuth struct {
			Scopes struct {
				Bot []string `yaml:"bot"`
			} `yaml:"scopes"`
		} `yaml:"oauth_config"`
		Settings struct {
			Events struct {
				RequestURL string   `yaml:"request_url"`
				BotEvents  []string `yaml:"bot_events"`
			} `yaml:"event_subscriptions"`
			Interactivity struct {
				Enabled    bool   `yaml:"is_enabled"`
				RequestURL string `yaml:"request_url"`
			} `yaml:"interactivity"`
			SocketMode bool `yaml:"socket_mode_enabled"`
		} `yaml:"settings"`
	}
	if err := yaml.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"app_mentions:read", "channels:history", "groups:history", "im:history", "chat:write", "files:read", "files:write", "reactions:write", "commands", "assistant:write", "reactions:read", "users:read", "mpim:history"} {
		if !slices.Contains(m.OAuth.Scopes.Bot, s) {
			t.Errorf("scope %s missing", s)
		}
	}
	for _, e := range []string{"app_mention", "message.channels", "message.groups", "message.im", "app_home_opened", "reaction_added",
		"app_context_changed", "agent_session_stopped", "agent_session_title_changed"} {
		if !slices.Contains(m.Settings.Events.BotEvents, e) {
			t.Errorf("event %s missing", e)
		}
	}
	// Agent messaging (agent_view) replaces the assistant split view: new
	// apps can only declare agent_view.
	if av := m.Features.AgentView; av == nil || av.Description == "" || len(av.Prompts) == 0 || len(av.Prompts) > 4 {
		t.Errorf("agent_view %+v", m.Features.AgentView)
	} else {
		for _, p := range av.Prompts {
			if p.Title == "" || p.Message == "" {
				t.Errorf("suggested prompt %+v", p)
			}
		}
	}
	if m.Features.AssistantView != nil {
		t.Error("assistant_view is declared: agent_view replaces it")
	}
	if len(m.Features.SlashCommands) != 1 || m.Features.SlashCommands[0].Command != "/threadline" {
		t.Errorf("slash commands %+v", m.Features.SlashCommands)
	}
	if !m.Settings.SocketMode || !m.Settings.Interactivity.Enabled {
		t.Error("socket mode and interactivity must be enabled")
	}
	// The HTTP endpoints match Handler's routes.
	for url, path := range map[string]string{m.Settings.Events.RequestURL: "/slack/events",
		m.Settings.Interactivity.RequestURL: "/slack/interactivity", m.Features.SlashCommands[0].URL: "/slack/commands"} {
		if len(url) < len(path) || url[len(url)-len(path):] != path {
			t.Errorf("request url %q does not end in %s", url, path)
		}
	}
}
