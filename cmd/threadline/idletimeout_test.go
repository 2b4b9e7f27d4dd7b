// defaults.idle_timeout and agents.<id>.idle_timeout reach the runs' agent
// configs (parsing is tested in configs).

package main

import (
	"log/slog"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/configs"
)

func TestIdleTimeoutConfig(t *testing.T) {
	cases := []struct {
		name, yaml    string
		claude, codex time.Duration
	}{
		{name: "unset", yaml: "{}", claude: configs.DefaultIdleTimeout, codex: configs.DefaultIdleTimeout},
		{name: "defaults", yaml: "defaults: {idle_timeout: 90s}", claude: 90 * time.Second, codex: 90 * time.Second},
		{name: "zero_disables", yaml: "defaults: {idle_timeout: 0}", claude: 0, codex: 0},
		{name: "agent_overrides", yaml: "defaults: {idle_timeout: 5m}\nagents: {claude: {idle_timeout: 0}, codex: {idle_timeout: 2h}}", claude: 0, codex: 2 * time.Hour},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			isolate(t)
			cfg, err := configs.Load(writeYAML(t, t.TempDir(), tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			set, err := loadAgents(cfg, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			if got := set.Configs["claude"].IdleTimeout; got != tc.claude {
				t.Errorf("claude idle timeout = %v, want %v", got, tc.claude)
			}
			if got := set.Configs["codex"].IdleTimeout; got != tc.codex {
				t.Errorf("codex idle timeout = %v, want %v", got, tc.codex)
			}
		})
	}
}
