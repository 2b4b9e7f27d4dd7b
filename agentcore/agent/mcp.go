package agent

import (
	"fmt"
	"strings"
)

// MCPServer is an MCP server a run's CLI starts over stdio, described
// without any CLI's syntax: each provider writes it in its CLI's form
// (Claude --mcp-config, codex mcp_servers, ACP mcpServers).
//
// Env values may be secret (a run's token): String and GoString print only
// their keys.
type MCPServer struct {
	// Name is the server's name, the prefix of its tools
	// ("threadline": mcp__threadline__send_file).
	Name string
	// Command is the absolute path of the server's executable.
	Command string
	Args    []string
	// Env is added to the server's environment.
	Env []EnvVar
}

// String names the server, its command and its environment's keys.
func (m MCPServer) String() string {
	keys := make([]string, len(m.Env))
	for i, e := range m.Env {
		keys[i] = e.String()
	}
	return fmt.Sprintf("%s: %s %s [%s]", m.Name, m.Command, strings.Join(m.Args, " "), strings.Join(keys, " "))
}

// GoString is String, so that %#v hides the values too.
func (m MCPServer) GoString() string { return "agent.MCPServer{" + m.String() + "}" }

// EnvMap returns the server's environment as a map.
func (m MCPServer) EnvMap() map[string]string {
	out := make(map[string]string, len(m.Env))
	for _, e := range m.Env {
		out[e.Key] = e.Value
	}
	return out
}

// EnvAlias is the name under which WithMCPEnv puts the server's env key
// in the CLI's environment: MCP_<NAME>_<KEY>, upper case. Not the key
// itself: the bot's own prefixes (THREADLINE_*, see procrun.IsBotSecret)
// never reach a child, and the CLI maps the alias back to key in the
// server's entry ("KEY": "${ALIAS}").
func (m MCPServer) EnvAlias(key string) string {
	return strings.ToUpper("MCP_" + m.Name + "_" + key)
}

// WithMCPEnv returns r with the environment of its MCP servers added to
// r.Env under their aliases (EnvAlias; a copy; r.Env wins on a key it
// sets), for a CLI that starts its MCP servers with its own environment
// and refers to their values by name, so that no value is written on its
// command line.
func (r RunRequest) WithMCPEnv() RunRequest {
	if len(r.MCPServers) == 0 {
		return r
	}
	env := make(map[string]string, len(r.Env)+2)
	for _, m := range r.MCPServers {
		for _, e := range m.Env {
			env[m.EnvAlias(e.Key)] = e.Value
		}
	}
	for k, v := range r.Env {
		env[k] = v
	}
	r.Env = env
	return r
}
