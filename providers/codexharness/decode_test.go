package codexharness

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/threadline-bot/threadline/providers/jsonrpc"
)

// twoStep is what a line gave before decodeLine: jsonrpc.Decode, then the
// params decoded again as the method's type.
func twoStep(p *Parser, line []byte) string {
	m, err := jsonrpc.Decode(line)
	if err != nil || m.Kind != jsonrpc.KindNotification {
		return fmt.Sprintf("%v %v", m.Kind, err)
	}
	evs, err := p.Parse(m.Method, m.Params, line)
	return lineOutcome(evs, err)
}

// oneStep is the run's path.
func oneStep(p *Parser, line []byte) string {
	m, params, err := decodeLine(line)
	if err != nil || m.Kind != jsonrpc.KindNotification {
		return fmt.Sprintf("%v %v", m.Kind, err)
	}
	evs, err := p.parse(m.Method, params, line)
	return lineOutcome(evs, err)
}

func lineOutcome(evs any, err error) string {
	b, _ := json.Marshal(evs)
	return fmt.Sprintf("%s %v", b, err)
}

// edgeLines are lines the union does not fit or that the fast path must
// leave to jsonrpc.Decode.
var edgeLines = []string{
	`{"method":"mcpServer/startupStatus/updated","params":{"name":"x","status":"failed","error":"boom"}}`,
	`{"method":"item/agentMessage/delta","params":null}`,
	`{"method":"item/agentMessage/delta"}`,
	`{"method":"item/agentMessage/delta","params":[1]}`,
	`{"method":"item/agentMessage/delta","params":{"itemId":5,"delta":"x"}}`,
	`{"method":"item/agentMessage/delta","params":{"itemId":"a","delta":"x","item":"not an item"}}`,
	`{"method":"warning","params":{"message":"m","summary":{"x":1}}}`,
	`{"Method":"item/agentMessage/delta","Params":{"ItemId":"a","Delta":"x"}}`,
	`{"method":"item/agentMessage/delta","params":{"itemId":"a","delta":"x"},"id":null}`,
	`{"method":"item/agentMessage/delta","params":{"itemId":"a","delta":"x"},"id":3}`,
	`{"method":"","params":{}}`,
	`{"method":7,"params":{}}`,
	`{"method":"turn/completed","params":{"threadId":"t","turn":{"id":"u","status":"completed","items":[{"type":"agentMessage","id":"a","text":"hi"}]}}}`,
	` {"method":"item/agentMessage/delta","params":{"itemId":"a","delta":"y"}} `,
	`{"method":"item/agentMessage/delta","params":{"itemId":"a","delta":"\ud800"}}`,
	`{"method":"item/agentMessage/delta","params":{"itemId":"a","delta":"x"}`,
	`[]`,
	`null`,
}

// TestDecodeLineMatchesTwoStep: every server line of the transcripts, and
// the edge lines, give the same events and errors through decodeLine as
// through the two decodes, with two parsers fed the same lines.
func TestDecodeLineMatchesTwoStep(t *testing.T) {
	var lines [][]byte
	for _, path := range transcripts(t) {
		lines = append(lines, serverLines(t, path)...)
	}
	for _, l := range edgeLines {
		lines = append(lines, []byte(l))
	}
	one, two := NewParser("p"), NewParser("p")
	for _, l := range lines {
		if got, want := oneStep(one, l), twoStep(two, l); got != want {
			t.Errorf("line %s:\none step %s\ntwo steps %s", l, got, want)
		}
	}
}

func FuzzDecodeLine(f *testing.F) {
	for _, path := range transcripts(f) {
		for _, l := range serverLines(f, path) {
			f.Add(l)
		}
	}
	for _, l := range edgeLines {
		f.Add([]byte(l))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		one, two := NewParser("p"), NewParser("p")
		for range 2 {
			if got, want := oneStep(one, line), twoStep(two, line); got != want {
				t.Fatalf("line %q:\none step %s\ntwo steps %s", line, got, want)
			}
		}
	})
}
