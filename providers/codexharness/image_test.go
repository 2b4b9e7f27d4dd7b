package codexharness

import (
	"bytes"
	"encoding/base64"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// TestParseImages: an imageGeneration item's inline result (the v2
// schema's ResultThreadItem) and an MCP tool's image block become image
// events with the bytes; on the run's one-pass path. A failed generation and a non-base64 result give none.
func TestParseImages(t *testing.T) {
	img := []byte("\x89PNG\r\n\x1a\n not really a png but bytes")
	b64 := base64.StdEncoding.EncodeToString(img)
	lines := map[string]int{
		`{"method":"item/completed","params":{"threadId":"t","turnId":"u","item":{"type":"imageGeneration","id":"ig_1","status":"completed","revisedPrompt":"a chart","result":"` + b64 + `","savedPath":null}}}`:                                                                                      1,
		`{"method":"item/completed","params":{"threadId":"t","turnId":"u","item":{"type":"mcpToolCall","id":"mc_1","server":"s","tool":"chart","status":"completed","arguments":{},"result":{"content":[{"type":"text","text":"ok"},{"type":"image","data":"` + b64 + `","mimeType":"image/png"}]}}}}`: 1,
		`{"method":"item/completed","params":{"threadId":"t","turnId":"u","item":{"type":"imageGeneration","id":"ig_2","status":"failed","result":""}}}`:                                                                                                                                               0,
		`{"method":"item/completed","params":{"threadId":"t","turnId":"u","item":{"type":"imageGeneration","id":"ig_3","status":"completed","result":"%%%"}}}`:                                                                                                                                         0,
	}
	for line, want := range lines {
		m, params, err := decodeLine([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		evs, err := NewParser("codex").parse(m.Method, params, []byte(line))
		if err != nil {
			t.Fatal(err)
		}
		var got []*agent.MadeImage
		for _, e := range evs {
			if e.Type == agent.EventImage {
				got = append(got, e.Image)
			}
		}
		if len(got) != want {
			t.Errorf("%.80s: %d images, want %d", line, len(got), want)
			continue
		}
		for _, g := range got {
			if !bytes.Equal(g.Data, img) || g.Size != len(img) || g.ToolID == "" {
				t.Errorf("image %+v", g)
			}
		}
	}
}
