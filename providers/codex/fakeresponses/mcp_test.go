package fakeresponses

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/providers/jsonrpc"
)

func TestServeMCP(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		``,
		`not json`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"deploy"}}`,
		`{"jsonrpc":"2.0","id":"elicit-1","result":{"action":"accept","content":{"replicas":2}}}`,
		`{"jsonrpc":"2.0","id":"c2","method":"tools/call","params":{"name":"deploy"}}`,
		`{"jsonrpc":"2.0","id":"elicit-2","error":{"code":-1,"message":"no"}}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"chart","arguments":{"title":"load"}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"resources/list"}`,
	}, "\n")
	var out bytes.Buffer
	if err := ServeMCP(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	// Each answer: id, then the method of a request or the result / error.
	want := []string{
		`0 {"capabilities":{"tools":{}},"protocolVersion":"2025-06-18","serverInfo":{"name":"fakemcp","version":"0.0.1"}}`,
		`1 {"tools":[{"description":"Deploy the service.","inputSchema":{"properties":{"service":{"type":"string"}},"type":"object"},"name":"deploy"},` +
			`{"description":"Draw a chart.","inputSchema":{"properties":{"title":{"type":"string"}},"type":"object"},"name":"chart"}]}`,
		`"elicit-1" elicitation/create {"mode":"form","message":"Deploy settings","requestedSchema":` + MCPForm + `}`,
		`"c1" {"content":[{"text":"elicitation answer: {\"action\":\"accept\",\"content\":{\"replicas\":2}}","type":"text"}],"isError":false}`,
		`"elicit-2" elicitation/create {"mode":"form","message":"Deploy settings","requestedSchema":` + MCPForm + `}`,
		`"c2" {"content":[{"text":"elicitation answer: error {\"code\":-1,\"message\":\"no\"}","type":"text"}],"isError":false}`,
		`8 {"content":[{"data":"` + base64.StdEncoding.EncodeToString(MCPImage) + `","mimeType":"image/png","type":"image"},{"text":"a chart","type":"text"}],"isError":false}`,
		`7 error -32601 method not found`,
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), out.String())
	}
	for i, l := range lines {
		var v struct {
			JSONRPC string `json:"jsonrpc"`
		}
		if err := json.Unmarshal([]byte(l), &v); err != nil || v.JSONRPC != "2.0" {
			t.Errorf("line %d has no jsonrpc 2.0: %s", i, l)
		}
		m, err := jsonrpc.Decode([]byte(l))
		if err != nil {
			t.Fatalf("line %d: %v: %s", i, err, l)
		}
		got := string(m.ID) + " "
		switch {
		case m.Kind == jsonrpc.KindRequest:
			got += m.Method + " " + string(m.Params)
		case m.Error != nil:
			got += fmt.Sprintf("error %d %s", m.Error.Code, m.Error.Message)
		default:
			got += string(m.Result)
		}
		if got != want[i] {
			t.Errorf("line %d\n got %s\nwant %s", i, got, want[i])
		}
	}
}
