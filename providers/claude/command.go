// Command line, environment and stdin prompt for one Claude Code run.

package claude

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// DefaultEnv is added to every child's environment unless the run's env sets
// the same key: no telemetry, error reporting, update checks or other
// non-essential traffic; and the todo tools (TaskCreate, TaskUpdate, ...),
// which 2.1.328 offers only with CLAUDE_CODE_ENABLE_TODO_TOOLS=1, so that the
// agent can keep a plan the chat shows (plan.updated).
var DefaultEnv = map[string]string{
	"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
	"DISABLE_AUTOUPDATER":                      "1",
	"CLAUDE_CODE_ENABLE_TODO_TOOLS":            "1",
}

// Args returns the CLI arguments for req (without the executable).
//
// The prompt is not an argument: it is written to stdin as a stream-json user
// message (see PromptLine). Permission prompts always come to the provider
// (--permission-prompt-tool stdio): with Approval ask and a Responses channel each
// becomes an interaction; otherwise the provider answers by policy (accept →
// allow, anything else → deny), recorded as answered by "policy". The CLI's own
// bypassPermissions mode is not used: it refuses to run as root. Model and
// effort are bound to their flag (--model=M, --effort=E).
//
// No settings file is read (--setting-sources= with no source): the user's
// (~/.claude, $CLAUDE_CONFIG_DIR) and the workspace's .claude/settings*.json
// are files an approved tool can write, and their permissions.allow,
// defaultMode or hooks would then answer for the chat, in this chat and in
// every other one of the agent user. Managed settings (root's, under
// /etc/claude-code) still apply; an operator adds settings of their own with
// agents.claude.args (--settings FILE, a file the agent cannot write).
func Args(req agent.RunRequest) []string {
	args := []string{
		"-p",
		"--input-format", "stream-json",
		"--output-format", "stream-json",
		"--verbose",
		"--include-partial-messages",
	}
	// One argument per option (commander takes --opt=value), so a value can
	// never be read as a flag; Run refuses invalid values before this.
	if req.Model != "" {
		args = append(args, "--model="+req.Model)
	}
	if req.Effort != "" {
		args = append(args, "--effort="+req.Effort)
	}
	if req.ResumeID != "" {
		args = append(args, "--resume", req.ResumeID)
		if req.Fork {
			args = append(args, "--fork-session")
		}
	}
	if req.Mode == agent.ModePlan {
		args = append(args, "--permission-mode", "plan")
	}
	args = append(args, "--permission-prompt-tool", "stdio", "--setting-sources=")
	if cfg := mcpConfig(req.MCPServers); cfg != "" {
		args = append(args, "--mcp-config="+cfg)
	}
	return append(args, req.Args...)
}

// mcpServer is one entry of an --mcp-config object.
type mcpServer struct {
	Type    string            `json:"type"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env,omitempty"`
}

// mcpConfig is the --mcp-config object of servers ("" when none). An env
// value is written as a reference to a variable ("${MCP_THREADLINE_KEY}",
// which the CLI expands from its own environment, where Run puts the value:
// agent.RunRequest.WithMCPEnv), so no value (a run's token)
// appears on the command line. One argument (--mcp-config=JSON): the option
// takes several values, and a value cannot then be read as a flag.
func mcpConfig(servers []agent.MCPServer) string {
	if len(servers) == 0 {
		return ""
	}
	m := make(map[string]mcpServer, len(servers))
	for _, s := range servers {
		e := mcpServer{Type: "stdio", Command: s.Command, Args: s.Args}
		if e.Args == nil {
			e.Args = []string{}
		}
		if len(s.Env) > 0 {
			e.Env = make(map[string]string, len(s.Env))
			for _, v := range s.Env {
				e.Env[v.Key] = "${" + s.EnvAlias(v.Key) + "}"
			}
		}
		m[s.Name] = e
	}
	b, _ := json.Marshal(map[string]any{"mcpServers": m}) // strings and maps only
	return string(b)
}

// asks reports whether permission prompts are routed to the chat.
func asks(req agent.RunRequest) bool {
	return req.Responses != nil && (req.Approval == agent.ApprovalAsk || req.Approval == "")
}

// PromptLine is the stream-json user message carrying req.Prompt and its
// images (base64 image blocks).
func PromptLine(req agent.RunRequest) ([]byte, error) {
	msg := userLine{Type: "user", Message: userMessage{Role: "user", Content: req.Prompt}}
	if len(req.Images) > 0 {
		blocks := make([]inputBlock, 0, len(req.Images)+1)
		for _, img := range req.Images {
			if img.MediaType == "" || len(img.Data) == 0 {
				return nil, fmt.Errorf("image %q: missing media type or data", img.Name)
			}
			blocks = append(blocks, inputBlock{Type: "image", Source: &imageSource{
				Type: "base64", MediaType: img.MediaType, Data: base64.StdEncoding.EncodeToString(img.Data),
			}})
		}
		if req.Prompt != "" {
			blocks = append(blocks, inputBlock{Type: "text", Text: req.Prompt})
		}
		msg.Message.Content = blocks
	}
	return json.Marshal(msg)
}

// interruptLine is the control request that stops the current turn.
func interruptLine(n int) []byte {
	var r controlRequest
	r.Type, r.RequestID, r.Request.Subtype = "control_request", fmt.Sprintf("int-%d", n), "interrupt"
	b, _ := json.Marshal(r)
	return b
}
