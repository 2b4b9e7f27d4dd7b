// Tests of defaults.idle_timeout and agents.<id>.idle_timeout: parsing, the
// default, 0 disabling and an agent's own value.

package configs

import (
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
			if err := parse([]byte(tc.yaml), &cfg); err != nil {
				t.Fatal(err)
			}
			if got := cfg.IdleTimeout("claude"); got != tc.claude {
				t.Errorf("claude idle timeout = %v, want %v", got, tc.claude)
			}
			if got := cfg.IdleTimeout("codex"); got != tc.codex {
				t.Errorf("codex idle timeout = %v, want %v", got, tc.codex)
			}
		})
	}
	var cfg Config
	if err := parse([]byte("defaults: {idle_timeout: soon}"), &cfg); err == nil {
		t.Fatal("a bad duration was accepted")
	}
}
