// A minimal MCP stdio server for the e2e tests: one tool whose call asks
// the client for a form (elicitation/create), so that codex forwards the
// form as mcpServer/elicitation/request, and one whose result is an image.

package fakeresponses

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"strings"

	"github.com/threadline-bot/threadline/providers/jsonrpc"
)

// MCPTool is the tool ServeMCP offers; its call sends MCPForm.
const MCPTool = "deploy"

// MCPImageTool is ServeMCP's other tool: its result is MCPImage, an image
// content block (and a line of text).
const MCPImageTool = "chart"

// MCPImage is the PNG image MCPImageTool returns (4x4, a blue diagonal).
var MCPImage = func() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	for i := range 4 {
		img.Set(i, i, color.RGBA{B: 200, A: 255})
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic(err)
	}
	return b.Bytes()
}()

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

// ServeMCP speaks MCP (JSON-RPC 2.0, one message per line) on in/out until
// in closes: initialize, tools/list with MCPTool, and tools/call, which
// sends elicitation/create with MCPForm and returns the client's answer as
// the tool's text ("elicitation answer: {action, content}"). Lines are read
// with jsonrpc.Decode; what it sends carries "jsonrpc":"2.0", which MCP
// clients require.
func ServeMCP(in io.Reader, out io.Writer) error {
	r := bufio.NewReader(in)
	w := json.NewEncoder(out)
	send := func(id json.RawMessage, key string, v any) error {
		return w.Encode(map[string]any{"jsonrpc": "2.0", "id": id, key: v})
	}
	var calls []json.RawMessage // tools/call ids waiting for the elicitation's answer
	nextID := 0
	for {
		line, rerr := r.ReadBytes('\n')
		if m, derr := jsonrpc.Decode(line); derr == nil {
			var err error
			switch {
			case m.Method == "initialize":
				var p struct {
					ProtocolVersion string `json:"protocolVersion"`
				}
				_ = json.Unmarshal(m.Params, &p)
				err = send(m.ID, "result", map[string]any{"protocolVersion": p.ProtocolVersion, "capabilities": map[string]any{"tools": map[string]any{}},
					"serverInfo": map[string]string{"name": "fakemcp", "version": "0.0.1"}})
			case m.Method == "tools/list":
				err = send(m.ID, "result", map[string]any{"tools": []any{map[string]any{
					"name": MCPTool, "description": "Deploy the service.",
					"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"service": map[string]string{"type": "string"}}},
				}, map[string]any{
					"name": MCPImageTool, "description": "Draw a chart.",
					"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"title": map[string]string{"type": "string"}}},
				}}})
			case m.Method == "tools/call" && toolName(m.Params) == MCPImageTool:
				err = send(m.ID, "result", map[string]any{"content": []any{
					map[string]string{"type": "image", "data": base64.StdEncoding.EncodeToString(MCPImage), "mimeType": "image/png"},
					map[string]string{"type": "text", "text": "a chart"},
				}, "isError": false})
			case m.Method == "tools/call":
				calls = append(calls, m.ID)
				nextID++
				err = w.Encode(map[string]any{"jsonrpc": "2.0", "id": fmt.Sprintf("elicit-%d", nextID), "method": "elicitation/create",
					"params": json.RawMessage(`{"mode":"form","message":"Deploy settings","requestedSchema":` + MCPForm + `}`)})
			case m.Kind == jsonrpc.KindResponse && len(calls) > 0:
				// The answer to our elicitation: the tool's result.
				answer := string(m.Result)
				if m.Error != nil {
					e, _ := json.Marshal(m.Error)
					answer = "error " + string(e)
				}
				id := calls[0]
				calls = calls[1:]
				err = send(id, "result", map[string]any{"content": []any{map[string]string{"type": "text", "text": "elicitation answer: " + answer}}, "isError": false})
			case m.Kind == jsonrpc.KindRequest:
				err = send(m.ID, "error", jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found"})
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

// toolName is the name a tools/call's params call.
func toolName(params json.RawMessage) string {
	var p struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(params, &p)
	return p.Name
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
