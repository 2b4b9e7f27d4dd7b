// The built-in definitions as a list, for tests that cover each of them, and
// the tests of their launch arguments, environment and setup.

package acp

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
)

// definitions returns the built-in ACP definitions: opencode, gemini, qwen,
// kilo, copilot-acp, droid, codex-acp and claude-agent-acp (verified here
// against the pinned CLIs), and kiro, devin, hermes, vibe, reasonix, vela
// and trae (launch syntax from their docs and OpenDesign's adapters; not
// verified here). The wiring in cmd/threadline lists the same constructors.
func definitions() []Definition {
	return []Definition{
		Opencode(), Gemini(), Qwen(), Kilo(), CopilotACP(), Droid(), CodexACP(), ClaudeAgentACP(),
		Kiro(), Devin(), Hermes(), Vibe(), Reasonix(), Vela(), Trae(),
	}
}

// lookup returns the built-in definition with this id.
func lookup(id agent.ProviderID) (Definition, bool) {
	for _, d := range definitions() {
		if d.ID == id {
			return d, true
		}
	}
	return Definition{}, false
}

func TestDefinitionsLaunch(t *testing.T) {
	ask := agent.RunRequest{Approval: agent.ApprovalAsk, Args: []string{"--x"}}
	accept := agent.RunRequest{Approval: agent.ApprovalAccept}
	tests := []struct {
		def         Definition
		bin         string
		ask, accept []string
	}{
		{Opencode(), "opencode", []string{"acp", "--x"}, []string{"acp"}},
		{Gemini(), "gemini", []string{"--acp", "--approval-mode", "default", "--x"}, []string{"--acp", "--approval-mode", "yolo"}},
		{Qwen(), "qwen", []string{"--acp", "--approval-mode", "default", "--x"}, []string{"--acp", "--approval-mode", "yolo"}},
		{Kiro(), "kiro-cli", []string{"acp", "--x"}, []string{"acp"}},
		{Kilo(), "kilo", []string{"acp", "--x"}, []string{"acp"}},
		{Devin(), "devin", []string{"acp", "--x"}, []string{"acp"}},
		{Hermes(), "hermes", []string{"acp", "--x"}, []string{"acp"}},
		{Vibe(), "vibe-acp", []string{"--x"}, []string{}},
		{Reasonix(), "reasonix", []string{"acp", "--x"}, []string{"acp"}},
		{Vela(), "vela", []string{"agent", "run", "--runtime", "opencode", "--x"}, []string{"agent", "run", "--runtime", "opencode"}},
		{Trae(), "traecli", []string{"acp", "serve", "--x"}, []string{"acp", "serve"}},
		{CopilotACP(), "copilot", []string{"--acp", "--no-auto-update", "--disable-client-telemetry", "--x"},
			[]string{"--acp", "--no-auto-update", "--disable-client-telemetry", "--allow-all-tools"}},
		{Droid(), "droid", []string{"exec", "--output-format", "acp", "--x"}, []string{"exec", "--output-format", "acp"}},
		{CodexACP(), "codex-acp", []string{"-c", `approval_policy="untrusted"`, "--x"}, []string{"-c", `approval_policy="never"`}},
		{ClaudeAgentACP(), "claude-agent-acp", []string{"--x"}, []string{}},
	}
	seen := map[agent.ProviderID]bool{}
	for _, tt := range tests {
		t.Run(string(tt.def.ID), func(t *testing.T) {
			if tt.def.Bin != tt.bin || tt.def.InstallHint == "" || tt.def.Name == "" || tt.def.Wiring == "" {
				t.Errorf("definition %+v", tt.def)
			}
			if got := tt.def.LaunchArgs(ask); !slices.Equal(got, tt.ask) {
				t.Errorf("ask args %q, want %q", got, tt.ask)
			}
			if got := tt.def.LaunchArgs(accept); !slices.Equal(got, tt.accept) {
				t.Errorf("accept args %q, want %q", got, tt.accept)
			}
			if d, ok := lookup(tt.def.ID); !ok || d.Bin != tt.def.Bin {
				t.Errorf("lookup(%s) = %v", tt.def.ID, ok)
			}
			if New(tt.def, nil, Options{}).ID() != tt.def.ID {
				t.Error("provider id")
			}
		})
		seen[tt.def.ID] = true
	}
	for _, d := range definitions() {
		if !seen[d.ID] {
			t.Errorf("definition %s not covered", d.ID)
		}
	}
	if env := Opencode().LaunchEnv(ask); env["OPENCODE_CONFIG_CONTENT"] != OpencodePermissionEnv || env["OPENCODE_DISABLE_AUTOUPDATE"] != "1" {
		t.Errorf("opencode ask env %v", env)
	}
	if env := Opencode().LaunchEnv(accept); env["OPENCODE_CONFIG_CONTENT"] != "" {
		t.Errorf("opencode accept env %v", env)
	}
	// As a run builds it: the provider's env and then the run's above the
	// definition's.
	req := agent.RunRequest{Env: map[string]string{"OPENCODE_CONFIG_CONTENT": "{}"}}
	l := procrun.Launch{Env: map[string]string{"A": "1"}, HostEnv: func() []string { return nil }}
	if over := l.Spec(req, nil, Opencode().LaunchEnv(req)).Env; !slices.Contains(over, "OPENCODE_CONFIG_CONTENT={}") || !slices.Contains(over, "A=1") {
		t.Errorf("run env must win: %v", over)
	}
}

func TestConfigure(t *testing.T) {
	ep := Endpoint{OpenAIBaseURL: "http://127.0.0.1:1/v1", GeminiBaseURL: "http://127.0.0.1:1", APIKey: "k", Model: "m"}
	ep.ResponsesBaseURL, ep.AnthropicBaseURL = "http://127.0.0.1:1/v1", "http://127.0.0.1:1"
	for _, d := range []Definition{Opencode(), Qwen(), Gemini(), Kilo(), Droid(), CodexACP()} {
		home := t.TempDir()
		env, err := d.Configure(home, ep)
		if err != nil || env["HOME"] != home {
			t.Fatalf("%s: %v %v", d.ID, env, err)
		}
		var files []string
		_ = filepath.WalkDir(home, func(p string, e os.DirEntry, _ error) error {
			if !e.IsDir() {
				files = append(files, strings.TrimPrefix(p, home))
			}
			return nil
		})
		if len(files) != 1 {
			t.Errorf("%s wrote %q", d.ID, files)
		}
	}
	for _, d := range []Definition{CopilotACP(), ClaudeAgentACP()} { // environment only
		if env, err := d.Configure(t.TempDir(), ep); err != nil || env["HOME"] == "" {
			t.Errorf("%s: %v %v", d.ID, env, err)
		}
	}
	if _, err := Gemini().Configure(t.TempDir(), Endpoint{OpenAIBaseURL: "x"}); err == nil {
		t.Error("gemini accepted an OpenAI-only endpoint")
	}
	for _, d := range []Definition{CodexACP(), ClaudeAgentACP()} {
		if _, err := d.Configure(t.TempDir(), Endpoint{OpenAIBaseURL: "x"}); err == nil {
			t.Errorf("%s accepted a Chat Completions endpoint", d.ID)
		}
	}
}
