// Tests that a model or effort that could read as a flag never reaches argv,
// and that a run's MCP servers reach the CLI once, as one --mcp-config
// argument, with their env values in the CLI's environment only.

package claude

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
)

func TestArgsBindValuesToFlags(t *testing.T) {
	t.Parallel()
	args := Args(agent.RunRequest{Model: "claude-sonnet-4-5", Effort: "high"})
	if !slices.Contains(args, "--model=claude-sonnet-4-5") || !slices.Contains(args, "--effort=high") {
		t.Fatalf("args %q do not bind model and effort to their flags", args)
	}
	if slices.Contains(args, "--model") || slices.Contains(args, "--effort") {
		t.Fatalf("args %q carry a bare --model/--effort", args)
	}
}

// markingCLI is a provider whose CLI is the shell script (MARK: the file
// it leaves its mark in, which is returned).
func markingCLI(t *testing.T, script string) (*Provider, string) {
	dir := t.TempDir()
	mark := filepath.Join(dir, "mark")
	bin := filepath.Join(dir, "claude")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"+strings.ReplaceAll(script, "MARK", mark)), 0o755); err != nil {
		t.Fatal(err)
	}
	return New(nil, Options{Launch: procrun.Launch{Bin: bin, HostEnv: func() []string { return []string{"PATH=/usr/bin:/bin"} }}}), mark
}

// TestRunRefusesFlagValues: Run refuses "--auto" (and other flag-like values)
// before anything is started: the CLI (a script that leaves a mark) never runs.
func TestRunRefusesFlagValues(t *testing.T) {
	t.Parallel()
	p, mark := markingCLI(t, "echo \"$@\" > MARK\n")
	for _, req := range []agent.RunRequest{
		{Prompt: "hi", Model: "--auto"},
		{Prompt: "hi", Model: "-m"},
		{Prompt: "hi", Effort: "--dangerously-skip-permissions"},
		{Prompt: "hi", Model: "sonnet --auto"},
		{Prompt: "hi", Mode: "bypassPermissions"},
	} {
		var events []agent.Event
		err := p.Run(t.Context(), req, func(ev agent.Event) { events = append(events, ev) })
		if !errors.Is(err, agent.ErrInvalidArgValue) {
			t.Errorf("Run(%+v) = %v, want ErrInvalidArgValue", req, err)
		}
		if len(events) != 0 {
			t.Errorf("Run(%+v) emitted %v", req, events)
		}
		if _, err := os.Stat(mark); !os.IsNotExist(err) {
			t.Fatalf("Run(%+v) started the CLI (stat: %v)", req, err)
		}
	}
}

var toolsServer = agent.MCPServer{Name: "threadline", Command: "/usr/lib/threadline/threadline-mcp",
	Env: []agent.EnvVar{{Key: "THREADLINE_TOOLS_SOCKET", Value: "/run/x/tools.sock"}, {Key: "THREADLINE_TOOLS_TOKEN", Value: "tok-secret-1"}}}

func TestArgsMCPConfig(t *testing.T) {
	t.Parallel()
	if args := Args(agent.RunRequest{}); strings.Contains(strings.Join(args, " "), "mcp") {
		t.Fatalf("args %q name an MCP config without servers", args)
	}
	// A prompt or model that looks like a flag is never one.
	args := Args(agent.RunRequest{Prompt: "--mcp-config={}", MCPServers: []agent.MCPServer{toolsServer}})
	var cfgs []string
	for _, a := range args {
		if strings.Contains(a, "mcp") {
			cfgs = append(cfgs, a)
		}
	}
	if len(cfgs) != 1 || !strings.HasPrefix(cfgs[0], "--mcp-config=") {
		t.Fatalf("args %q: want exactly one --mcp-config=JSON", args)
	}
	if strings.Contains(cfgs[0], "tok-secret-1") || strings.Contains(cfgs[0], "/run/x/tools.sock") {
		t.Fatalf("an env value on the command line: %s", cfgs[0])
	}
	var cfg struct {
		MCPServers map[string]mcpServer `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(strings.TrimPrefix(cfgs[0], "--mcp-config=")), &cfg); err != nil {
		t.Fatal(err)
	}
	s, ok := cfg.MCPServers["threadline"]
	if len(cfg.MCPServers) != 1 || !ok || s.Type != "stdio" || s.Command != toolsServer.Command ||
		s.Env["THREADLINE_TOOLS_TOKEN"] != "${MCP_THREADLINE_THREADLINE_TOOLS_TOKEN}" || s.Env["THREADLINE_TOOLS_SOCKET"] != "${MCP_THREADLINE_THREADLINE_TOOLS_SOCKET}" {
		t.Fatalf("config %+v", cfg)
	}
}

// TestRunPassesMCPEnv: the CLI (a script that records its arguments and
// environment) gets the config once and the values in its environment.
func TestRunPassesMCPEnv(t *testing.T) {
	t.Parallel()
	p, mark := markingCLI(t, "printf '%s\\n' \"$@\" > MARK\nenv >> MARK\n")
	_ = p.Run(t.Context(), agent.RunRequest{Prompt: "hi", Cwd: filepath.Dir(mark), MCPServers: []agent.MCPServer{toolsServer}}, func(agent.Event) {})
	b, err := os.ReadFile(mark)
	if err != nil {
		t.Fatal(err)
	}
	seen := string(b)
	if strings.Count(seen, "--mcp-config=") != 1 || !strings.Contains(seen, "\nMCP_THREADLINE_THREADLINE_TOOLS_TOKEN=tok-secret-1\n") ||
		!strings.Contains(seen, "\nMCP_THREADLINE_THREADLINE_TOOLS_SOCKET=/run/x/tools.sock\n") {
		t.Fatalf("the CLI saw:\n%s", seen)
	}
}

func TestMCPServerStringHidesValues(t *testing.T) {
	t.Parallel()
	for _, s := range []string{toolsServer.String(), toolsServer.GoString()} {
		if strings.Contains(s, "tok-secret-1") || !strings.Contains(s, "THREADLINE_TOOLS_TOKEN") {
			t.Fatalf("%s", s)
		}
	}
}
