// Tests of defaults.idle_timeout and agents.<id>.idle_timeout: parsing, the
// default, 0 disabling, and the value reaching the runs' agent configs.

package main

import (
	"log/slog"
	"testing"
	"time"
)

func TestIdleTimeoutConfig(t *testing.T) {
	cases := []struct {
		name, yaml    string
		claude, codex time.Duration
	}{
		{name: "unset", yaml: "{}", claude: DefaultIdleTimeout, codex: DefaultIdleTimeout},
		{name: "defaults", yaml: "defaults: {idle_timeout: 90s}", claude: 90 * time.Second, codex: 90 * time.Second},
		{name: "zero_disables", yaml: "defaults: {idle_timeout: 0}", claude: 0, codex: 0},
		{name: "agent_overrides", yaml: "defaults: {idle_timeout: 5m}\nagents: {claude: {idle_timeout: 0}, codex: {idle_timeout: 2h}}", claude: 0, codex: 2 * time.Hour},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var cfg Config
			if err := parseConfig([]byte(tc.yaml), &cfg); err != nil {
				t.Fatal(err)
			}
			set, err := loadAgents(&cfg, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			if got := set.configs["claude"].IdleTimeout; got != tc.claude {
				t.Errorf("claude idle timeout = %v, want %v", got, tc.claude)
			}
			if got := set.configs["codex"].IdleTimeout; got != tc.codex {
				t.Errorf("codex idle timeout = %v, want %v", got, tc.codex)
			}
		})
	}
	var cfg Config
	if err := parseConfig([]byte("defaults: {idle_timeout: soon}"), &cfg); err == nil {
		t.Fatal("a bad duration was accepted")
	}
}
