package anthropic

import (
	"encoding/json"
	"testing"
)

func TestResultText(t *testing.T) {
	for content, want := range map[string]string{
		``:        "",
		`"plain"`: "plain",
		`[{"type":"text","text":"a"},{"type":"image"},{"type":"text","text":"b"}]`: "ab",
		`{"odd":1}`: `{"odd":1}`,
	} {
		if got := (Block{Type: "tool_result", Content: json.RawMessage(content)}).ResultText(); got != want {
			t.Errorf("ResultText(%s) = %q, want %q", content, got, want)
		}
	}
}
