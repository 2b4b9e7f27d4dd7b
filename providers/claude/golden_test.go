// Golden tests: real Claude Code 2.1.328 transcripts → normalized events.

package claude

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/providers/providertest"
)

// stdoutLines returns the CLI's stdout lines of a transcript: raw print-mode
// stdout (*.jsonl) or a drive.py capture (*.drive.jsonl).
func stdoutLines(t testing.TB, path string) [][]byte {
	t.Helper()
	if strings.HasSuffix(path, ".drive.jsonl") {
		return providertest.Messages(t, path, "cli->host")
	}
	return providertest.Lines(t, path)
}

// render parses lines with a fresh parser and renders one JSON line per
// event, parse error or stdin line the parser asked for.
func render(t testing.TB, lines [][]byte) []byte {
	t.Helper()
	p := NewParser("")
	return providertest.RenderLines(t, p, lines, func(r *providertest.Recorder) { r.Stdin(p.TakeOutgoing()) }).Bytes()
}

func TestGolden(t *testing.T) {
	providertest.Golden(t, "testdata/*.jsonl", func(t *testing.T, in string) []byte {
		return render(t, stdoutLines(t, in))
	})
}

func BenchmarkParse(b *testing.B) {
	for _, name := range []string{"bigout.jsonl", "basic.jsonl"} {
		b.Run(name, func(b *testing.B) {
			lines := stdoutLines(b, filepath.Join("testdata", name))
			providertest.BenchLines(b, lines, func() {
				p := NewParser("")
				for _, l := range lines {
					if _, err := p.Parse(l); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
