// Test definitions: a small built-in set shaped like the provider packages'
// descriptors (the real ones are checked where they are wired, in
// cmd/threadline).

package registry

import "testing"

// testBuiltins returns a fresh, valid built-in set: a claude-like adapter
// (free-form models, declared efforts), codex over its protocol, an
// opencode-like one with a fallback executable and a derived mimo, and a
// qoder-like one with a closed model list.
func testBuiltins(t *testing.T) []Definition {
	t.Helper()
	claude := Definition{
		ID: "claude", Name: "Claude Code", Executable: "claude",
		VerifiedVersions: []string{"2.1.328"},
		Models:           Models{Fallback: []string{"sonnet", "opus", "haiku"}, FreeForm: true},
		Efforts:          []string{"low", "medium", "high", "xhigh", "max"},
		Args: ArgSpec{
			Base:  []string{"-p", "--output-format", "stream-json"},
			Model: "--model", Effort: "--effort", Resume: "--resume", Fork: "--fork-session",
		},
		Prompt: DeliverProtocol, Format: FormatClaudeStreamJSON, Resume: ResumeCLIFlag, NativeFork: true,
		Caps:   Capabilities{Interactions: true, Images: true, Effort: true, Plan: true},
		Skills: SkillsSlash,
		Auth: AuthCheck{
			Env:   []string{"ANTHROPIC_API_KEY"},
			Files: []string{"${CLAUDE_CONFIG_DIR}/.credentials.json", "~/.claude/.credentials.json"},
		},
		InstallHint: "npm install -g @anthropic-ai/claude-code",
	}
	codex := Definition{
		ID: "codex", Name: "Codex", Executable: "codex",
		Models: Models{Fallback: []string{"gpt-5.5"}, FreeForm: true},
		Args:   ArgSpec{Base: []string{"app-server"}},
		Prompt: DeliverProtocol, Format: FormatCodexAppServer, Resume: ResumeProtocol, NativeFork: true,
		Skills: SkillsDollar, InstallHint: "npm install -g @openai/codex",
	}
	opencode := Definition{
		ID: "opencode", Name: "OpenCode", Executable: "opencode", Fallbacks: []string{"opencode-cli"},
		Models: Models{Command: &ModelCommand{Args: []string{"models"}, Parse: ParseSlashModels}, Fallback: []string{"openai/gpt-5"}, FreeForm: true},
		Args: ArgSpec{
			Base:  []string{"run", "--format", "json"},
			Model: "--model", Effort: "--variant", Resume: "-s", Fork: "--fork", Accept: []string{"--auto"},
		},
		Prompt: DeliverStdin, Format: FormatJSONEvents, Dialect: DialectOpenCode, Resume: ResumeCLIFlag, NativeFork: true,
		Caps: Capabilities{Effort: true}, Skills: SkillsInstructions, InstallHint: "npm install -g opencode-ai",
	}
	mimo := opencode.Clone()
	mimo.ID, mimo.Name, mimo.Executable, mimo.Fallbacks, mimo.Dialect = "mimo", "MiMo Code", "mimo", nil, DialectMimo
	qoder := Definition{
		ID: "qoder", Name: "Qoder CLI", Executable: "qodercli",
		Models: Models{Fallback: []string{"auto", "lite", "efficient", "performance", "ultimate"}},
		Args:   ArgSpec{Base: []string{"-p"}, Model: "--model", Resume: "-r", Accept: []string{"--yolo"}},
		Prompt: DeliverStdin, Format: FormatJSONEvents, Dialect: DialectQoder, Resume: ResumeCLIFlag,
		Skills: SkillsInstructions, InstallHint: "npm install -g @qoder-ai/qodercli",
	}
	for _, d := range []*Definition{&claude, &codex, &opencode, &mimo, &qoder} {
		d.Verified = Fixtures("agentcore/registry testBuiltins", "a test definition")
	}
	defs, err := Builtins(qoder, opencode, mimo, codex, claude)
	if err != nil {
		t.Fatal(err)
	}
	return defs
}

// testLookup returns the test built-in with id.
func testLookup(t *testing.T, id string) Definition {
	t.Helper()
	return find(t, testBuiltins(t), id)
}
