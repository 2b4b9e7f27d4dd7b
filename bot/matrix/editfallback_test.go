package matrix

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/threadline-bot/threadline/chatops"
)

// TestEditFallbackOnCharacterBoundary: the "* " fallback body of an edit of
// a long non-ASCII answer is valid UTF-8, cut on a character boundary within
// 50 bytes, whatever the characters' widths and where they fall; the edit's
// m.new_content keeps the whole answer.
func TestEditFallbackOnCharacterBoundary(t *testing.T) {
	for _, text := range []string{"Grüße aus Köln, ", "日本語のテキスト、", "🦀🐍🐹 ", "ж"} {
		for pad := range 4 {
			answer := strings.Repeat("a", pad) + strings.Repeat(text, 80)
			wire, _, err := fitWire(outgoing{v: chatops.View{Body: answer}, edit: "$orig"}, DefaultMaxEventBytes, false)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := json.Marshal(wire)
			var got struct {
				Body       string `json:"body"`
				NewContent struct {
					Body string `json:"body"`
				} `json:"m.new_content"`
			}
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatal(err)
			}
			if !utf8.ValidString(got.Body) || strings.ContainsRune(got.Body, utf8.RuneError) {
				t.Errorf("pad %d %q: fallback body is not valid UTF-8: %q", pad, text, got.Body)
			}
			cut, ok := strings.CutSuffix(got.Body, "[edit fallback cut…]")
			if !ok || !strings.HasPrefix("* "+answer, cut) || len(cut) > 50 || len(cut) < 50-utf8.UTFMax+1 {
				t.Errorf("pad %d %q: fallback body %q (want a prefix of the answer within 50 bytes, then the cut mark)", pad, text, got.Body)
			}
			if got.NewContent.Body != answer {
				t.Errorf("pad %d %q: m.new_content body %q", pad, text, got.NewContent.Body)
			}
		}
	}
	if got := editFallback("kurz, schön"); got != "* kurz, schön" {
		t.Errorf("short edit fallback %q", got)
	}
}
