package claude

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// FuzzParse feeds arbitrary lines to the stream-json parser: it must never
// panic, and what it returns must be valid events (a type, JSON-encodable).
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	for _, name := range files {
		if bytes.HasSuffix([]byte(name), []byte(".events.jsonl")) {
			continue
		}
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		for i, line := range bytes.Split(b, []byte("\n")) {
			if i > 40 || len(line) > 4096 {
				break
			}
			f.Add(line)
		}
	}
	f.Add([]byte(`{"type":"result","is_error":true,"errors":["No conversation found with session ID: x"]}`))
	f.Add([]byte(`{"type":"control_request","request_id":7,"request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"ls"}}}`))
	f.Add([]byte(`{"type":"stream_event","event":{"type":"content_block_delta","delta":{"type":"text_delta","text":"hi"}}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		p := NewParser("")
		evs, err := p.Parse(line)
		if err != nil {
			return
		}
		for _, ev := range evs {
			if ev.Type == "" {
				t.Fatalf("event without a type from %q", line)
			}
			if _, err := json.Marshal(ev); err != nil {
				t.Fatalf("event %s does not encode: %v", ev.Type, err)
			}
			if ev.Type == agent.EventInteractionRequested && (ev.Interaction == nil || ev.Interaction.ID == "" || len(ev.Interaction.NativeID) == 0) {
				t.Fatalf("interaction without ids from %q", line)
			}
		}
		// A response to whatever is pending never panics either.
		for _, ev := range evs {
			if ev.Interaction != nil {
				_, _ = p.Respond(agent.InteractionResponse{InteractionID: ev.Interaction.ID, Decision: agent.DecisionApprove})
			}
		}
	})
}
