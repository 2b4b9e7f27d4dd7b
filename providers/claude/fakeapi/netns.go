package fakeapi

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/threadline-bot/threadline/providers/providertest"
)

// EnvClaudeBin overrides the Claude Code executable in the e2e tests.
const EnvClaudeBin = "THREADLINE_CLAUDE_BIN"

// FindClaude locates the Claude Code CLI (see providertest.FindCLI).
func FindClaude(t testing.TB) string {
	t.Helper()
	return providertest.FindCLI(t, "claude", EnvClaudeBin)
}

// ClaudeEnv is the environment for a Claude Code child talking to this server:
// HOME, CLAUDE_CONFIG_DIR and XDG dirs under dir, the fake's base URL, a dummy
// key, and telemetry, error reporting, auto-updates and nonessential traffic off.
func (s *Server) ClaudeEnv(dir string) map[string]string {
	home := filepath.Join(dir, "home")
	cfg := filepath.Join(dir, "claude-config")
	for _, d := range []string{home, cfg} {
		_ = os.MkdirAll(d, 0o700)
	}
	return map[string]string{
		"HOME":               home,
		"CLAUDE_CONFIG_DIR":  cfg,
		"XDG_CONFIG_HOME":    filepath.Join(home, ".config"),
		"XDG_CACHE_HOME":     filepath.Join(home, ".cache"),
		"XDG_DATA_HOME":      filepath.Join(home, ".local", "share"),
		"XDG_STATE_HOME":     filepath.Join(home, ".local", "state"),
		"ANTHROPIC_BASE_URL": s.URL(),
		"ANTHROPIC_API_KEY":  "dummy",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
		"DISABLE_AUTOUPDATER":                      "1",
		"DISABLE_TELEMETRY":                        "1",
		"DISABLE_ERROR_REPORTING":                  "1",
		"DISABLE_NON_ESSENTIAL_MODEL_CALLS":        "1",
		"NO_PROXY":                                 "127.0.0.1,localhost",
		"no_proxy":                                 "127.0.0.1,localhost",
	}
}
