// The npm install layout the newer definitions rely on: the native binary
// behind a wrapper, the package.json version probe, and sign-in detection
// that knows the offline and BYOK variables.

package acp

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/registry"
)

// npmInstall lays out root/node_modules as npm does for pkg with bin
// wrapper (relative to the package) at version, linked from .bin/name.
func npmInstall(t *testing.T, root, pkg, wrapper, name, version string) string {
	t.Helper()
	dir := filepath.Join(root, "node_modules", filepath.FromSlash(pkg))
	write(t, filepath.Join(dir, "package.json"), `{"name": "`+pkg+`", "version": "`+version+`", "bin": {}}`, 0o644)
	write(t, filepath.Join(dir, filepath.FromSlash(wrapper)), "#!/usr/bin/env node\n", 0o755)
	link := filepath.Join(root, "node_modules", ".bin", name)
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	rel, _ := filepath.Rel(filepath.Dir(link), filepath.Join(dir, filepath.FromSlash(wrapper)))
	if err := os.Symlink(rel, link); err != nil {
		t.Fatal(err)
	}
	return link
}

func write(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

func TestNpmNativeResolve(t *testing.T) {
	n := *CodexACP().Native
	platform := "@zed-industries/codex-acp-" + npmPlatform()

	// Hoisted: the platform package beside the wrapper's package.
	root := t.TempDir()
	link := npmInstall(t, root, "@zed-industries/codex-acp", "bin/codex-acp.js", "codex-acp", "0.16.0")
	native := filepath.Join(root, "node_modules", filepath.FromSlash(platform), "bin", "codex-acp")
	if got := n.Resolve(link); got != link {
		t.Errorf("without the platform package Resolve = %s, want the wrapper", got)
	}
	write(t, native, "\x7fELF", 0o755)
	if got := n.Resolve(link); got != native {
		t.Errorf("hoisted: Resolve = %s, want %s", got, native)
	}

	// Nested in the wrapper's package (npm install -g of an older npm).
	root = t.TempDir()
	link = npmInstall(t, root, "@zed-industries/codex-acp", "bin/codex-acp.js", "codex-acp", "0.16.0")
	native = filepath.Join(root, "node_modules", "@zed-industries", "codex-acp", "node_modules", filepath.FromSlash(platform), "bin", "codex-acp")
	write(t, native, "\x7fELF", 0o755)
	if got := n.Resolve(link); got != native {
		t.Errorf("nested: Resolve = %s, want %s", got, native)
	}

	// A native release on PATH, or anything that is not the wrapper, is
	// launched as it is.
	own := filepath.Join(t.TempDir(), "codex-acp")
	write(t, own, "\x7fELF", 0o755)
	if got := n.Resolve(own); got != own {
		t.Errorf("native binary: Resolve = %s", got)
	}
	if got := n.Resolve("/no/such/codex-acp"); got != "/no/such/codex-acp" {
		t.Errorf("missing: Resolve = %s", got)
	}
	// A bare name is looked up on PATH first.
	t.Setenv("PATH", filepath.Dir(link))
	if got := n.Resolve("codex-acp"); got != native {
		t.Errorf("bare name: Resolve = %s, want %s", got, native)
	}
}

// TestVersionFromPackageJSON: codex-acp and claude-agent-acp print no
// version, so detection reads the npm package's package.json beside the
// resolved executable.
func TestVersionFromPackageJSON(t *testing.T) {
	root := t.TempDir()
	npmInstall(t, root, "@zed-industries/codex-acp", "bin/codex-acp.js", "codex-acp", "0.16.0")
	npmInstall(t, root, "@zed-industries/claude-agent-acp", "dist/index.js", "claude-agent-acp", "0.23.2")
	bin := filepath.Join(root, "node_modules", ".bin")
	defs := []registry.Definition{CodexACP().Descriptor, ClaudeAgentACP().Descriptor}
	reports := registry.Probe(t.Context(), defs, registry.ProbeOptions{
		LookPath: func(name string) (string, error) { return filepath.Join(bin, name), nil },
		Getenv:   func(string) string { return "" },
		Home:     t.TempDir(),
	})
	for i, want := range []struct{ version, warning string }{{"0.16.0", ""}, {"0.23.2", "verified with 0.23.1; found 0.23.2"}} {
		r := reports[i]
		if r.Status != registry.StatusReady || r.Version != want.version || r.VersionWarning != want.warning {
			t.Errorf("%s: status %s version %q warning %q problems %v", r.ID, r.Status, r.Version, r.VersionWarning, r.Problems)
		}
	}
	// Without the package.json (a native release) the probe says so.
	own := filepath.Join(t.TempDir(), "codex-acp")
	write(t, own, "\x7fELF", 0o755)
	r := registry.Probe(t.Context(), defs[:1], registry.ProbeOptions{
		LookPath: func(string) (string, error) { return own, nil }, Getenv: func(string) string { return "" }, Home: t.TempDir(),
	})[0]
	if r.Status != registry.StatusBroken || len(r.Problems) == 0 {
		t.Errorf("native release: status %s problems %v", r.Status, r.Problems)
	}
}

// TestSignInVariables: the offline and BYOK switches count as signed in.
func TestSignInVariables(t *testing.T) {
	for _, tt := range []struct {
		def Definition
		env string
	}{
		{CopilotACP(), "COPILOT_PROVIDER_BASE_URL"},
		{Droid(), "FACTORY_AIRGAP_ENABLED"},
		{Droid(), "FACTORY_API_KEY"},
		{Kilo(), "KILO_API_KEY"},
		{CodexACP(), "OPENAI_API_KEY"},
		{ClaudeAgentACP(), "ANTHROPIC_API_KEY"},
	} {
		opts := registry.ProbeOptions{Home: t.TempDir(), Getenv: func(k string) string {
			if k == tt.env {
				return "1"
			}
			return ""
		}}
		if st, detail := registry.CheckAuth(tt.def.Descriptor, opts); st != registry.AuthOK {
			t.Errorf("%s with %s: %s (%s)", tt.def.ID, tt.env, st, detail)
		}
		opts.Getenv = func(string) string { return "" }
		if st, _ := registry.CheckAuth(tt.def.Descriptor, opts); st != registry.AuthMissing {
			t.Errorf("%s without %s: %s", tt.def.ID, tt.env, st)
		}
	}
}

func TestRootEnv(t *testing.T) {
	env := ClaudeAgentACP().LaunchEnv(agent.RunRequest{})
	if got, root := env["IS_SANDBOX"], os.Geteuid() == 0; (got == "1") != root {
		t.Errorf("IS_SANDBOX=%q as uid %d", got, os.Geteuid())
	}
	if env["DISABLE_TELEMETRY"] != "1" {
		t.Errorf("env %v", env)
	}
}

// TestTempEnv: claude-agent-acp's Bash tool writes under
// $CLAUDE_CODE_TMPDIR, else /tmp: a run whose environment sets TMPDIR (a
// sandboxed one, which may not write /tmp) gets it there too; the others
// are left to the CLI's default, and no other definition gets it.
func TestTempEnv(t *testing.T) {
	sandboxed := agent.RunRequest{Env: map[string]string{"TMPDIR": "/state/chat/tmp"}}
	if got := ClaudeAgentACP().LaunchEnv(sandboxed)["CLAUDE_CODE_TMPDIR"]; got != "/state/chat/tmp" {
		t.Errorf("sandboxed: CLAUDE_CODE_TMPDIR=%q", got)
	}
	if env := ClaudeAgentACP().LaunchEnv(agent.RunRequest{}); env["CLAUDE_CODE_TMPDIR"] != "" {
		t.Errorf("without TMPDIR: %v", env)
	}
	if env := Opencode().LaunchEnv(sandboxed); env["CLAUDE_CODE_TMPDIR"] != "" {
		t.Errorf("opencode: %v", env)
	}
}
