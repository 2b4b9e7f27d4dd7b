// A minimal MCP stdio server for the e2e tests: one tool whose call asks
// the client for a form (elicitation/create), so that codex forwards the
// form as mcpServer/elicitation/request.

package fakeresponses

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// MCPTool is the tool ServeMCP offers; its call sends MCPForm.
const MCPTool = "deploy"

// MCPForm is the requestedSchema of the tool's elicitation: an integer, a
// titled choice and a boolean, the first two required.
const MCPForm = `{"type":"object","properties":{` +
	`"replicas":{"type":"integer","title":"Replicas","description":"How many copies to run"},` +
	`"env":{"type":"string","title":"Environment","oneOf":[{"const":"prod","title":"Production"},{"const":"stg","title":"Staging"}]},` +
	`"notify":{"type":"boolean","title":"Notify the team"}},"required":["replicas","env"]}`

// MCPConfigTOML is the config.toml section that makes codex start ServeMCP
// as the MCP server name: command and args run it, env is its environment.
func MCPConfigTOML(name, command string, args []string, env map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n[mcp_servers.%s]\ncommand = %q\nargs = [", name, command)
	for i, a := range args {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", a)
	}
	b.WriteString("]\n")
	if len(env) > 0 {
		fmt.Fprintf(&b, "\n[mcp_servers.%s.env]\n", name)
		for k, v := range env {
			fmt.Fprintf(&b, "%s = %q\n", k, v)
		}
	}
	return b.String()
}

type mcpMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

// ServeMCP speaks MCP (JSON-RPC 2.0, one message per line) on in/out until
// in closes: initialize, tools/list with MCPTool, and tools/call, which
// sends elicitation/create with MCPForm and returns the client's answer as
// the tool's text ("elicitation answer: {action, content}").
func ServeMCP(in io.Reader, out io.Writer) error {
	r := bufio.NewReader(in)
	w := json.NewEncoder(out)
	send := func(m mcpMessage) error { m.JSONRPC = "2.0"; return w.Encode(m) }
	reply := func(id json.RawMessage, v any) error {
		b, _ := json.Marshal(v)
		return send(mcpMessage{ID: id, Result: b})
	}
	var calls []json.RawMessage // tools/call ids waiting for the elicitation's answer
	nextID := 0
	for {
		line, rerr := r.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			var err error
			var m mcpMessage
			if json.Unmarshal(line, &m) != nil {
				continue
			}
			switch {
			case m.Method == "initialize":
				var p struct {
					ProtocolVersion string `json:"protocolVersion"`
				}
				_ = json.Unmarshal(m.Params, &p)
				err = reply(m.ID, map[string]any{"protocolVersion": p.ProtocolVersion, "capabilities": map[string]any{"tools": map[string]any{}},
					"serverInfo": map[string]string{"name": "fakemcp", "version": "0.0.1"}})
			case m.Method == "tools/list":
				err = reply(m.ID, map[string]any{"tools": []any{map[string]any{
					"name": MCPTool, "description": "Deploy the service.",
					"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"service": map[string]string{"type": "string"}}},
				}}})
			case m.Method == "tools/call":
				calls = append(calls, m.ID)
				nextID++
				id, _ := json.Marshal(fmt.Sprintf("elicit-%d", nextID))
				err = send(mcpMessage{ID: id, Method: "elicitation/create", Params: json.RawMessage(
					`{"mode":"form","message":"Deploy settings","requestedSchema":` + MCPForm + `}`)})
			case m.Method == "" && len(calls) > 0 && (m.Result != nil || m.Error != nil):
				// The answer to our elicitation: the tool's result.
				answer := string(m.Result)
				if m.Error != nil {
					answer = "error " + string(m.Error)
				}
				id := calls[0]
				calls = calls[1:]
				err = reply(id, map[string]any{"content": []any{map[string]string{"type": "text", "text": "elicitation answer: " + answer}}, "isError": false})
			case len(m.ID) > 0 && m.Method != "":
				err = send(mcpMessage{ID: m.ID, Error: json.RawMessage(`{"code":-32601,"message":"method not found"}`)})
			}
			if err != nil {
				return err
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// MCPCall is ToolCall for a tool of an MCP server: codex offers those in a
// namespace tool, so the call names the namespace that holds tool.
func MCPCall(tool string, args any) Script {
	return func(req *Request) *Reply {
		reply := ToolCall(tool, args)(req)
		for i, it := range reply.Items {
			if it.Type == "function_call" {
				reply.Items[i].Namespace = req.namespaceOf(tool)
			}
		}
		return reply
	}
}

// namespaceOf is the name of the namespace tool that offers tool.
func (r *Request) namespaceOf(tool string) string {
	for _, t := range r.Body.Tools {
		var v struct {
			Type  string `json:"type"`
			Name  string `json:"name"`
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		if json.Unmarshal(t, &v) != nil || v.Type != "namespace" {
			continue
		}
		for _, n := range v.Tools {
			if n.Name == tool {
				return v.Name
			}
		}
	}
	return ""
}
