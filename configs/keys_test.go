package configs

import (
	"strings"
	"testing"
)

// TestUnknownKeyNamesPathAndNearest: a misspelt key is refused with its
// line, its whole key path and the nearest valid key; a key far from every
// valid one lists the valid keys of its section.
func TestUnknownKeyNamesPathAndNearest(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"defaults", "defaults:\n  agnet: claude\n", "line 2: unknown key defaults.agnet (did you mean defaults.agent?)"},
		{"top level", "workdri: /tmp\n", "line 1: unknown key workdri (did you mean workdir?)"},
		{"under a map key", "slack:\n  bot_token: xoxb-1\n  app_token: xapp-1\n  channels:\n    C1: {alow: [U1]}\n",
			"line 5: unknown key slack.channels.C1.alow (did you mean slack.channels.C1.allow?)"},
		{"agent profile", "agents:\n  claude: {pass-env: [X]}\n", "unknown key agents.claude.pass-env (did you mean agents.claude.pass_env?)"},
		{"a dotted map key is quoted", "matrix:\n  homeserver: https://m.example.org\n  user_id: \"@t:example.org\"\n  access_token: x\n  rooms:\n    \"!r:example.org\": {agnet: claude}\n",
			`unknown key matrix.rooms["!r:example.org"].agnet (did you mean matrix.rooms["!r:example.org"].agent?)`},
		{"nothing near", "lxd:\n  zzzzzzzz: 1\n", "unknown key lxd.zzzzzzzz (valid keys here: credential_sync_timeout, image, instructions, profiles, remote)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cfg Config
			err := parse([]byte(tc.body), &cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"agnet", "agent", 2}, {"workdri", "workdir", 2}, {"alow", "allow", 1}, {"abc", "", 3}} {
		if got := editDistance(tc.a, tc.b); got != tc.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.d)
		}
	}
}
