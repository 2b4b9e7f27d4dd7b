// Fuzz and benchmarks of the output parsers (model lists, versions).

package registry

import (
	"strings"
	"testing"
	"unicode/utf8"
)

var modelSeeds = []string{
	"opencode/big-pickle\nanthropic/claude-sonnet-4-5\n{\n  \"variants\": {}\n}\n",
	"Available models\n\nauto - Auto\nsonnet-4 - Claude 4 Sonnet\n",
	"# comment\nDefault model:\ngrok-build\ngrok-4.3\n",
	"No models available for this account.\n",
	"codex-cli 0.169.0\n", "v1.2.3-rc.1+build.5", "kimi, version 1.3.0",
}

func FuzzModelParsers(f *testing.F) {
	for _, s := range modelSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, out string) {
		for name, parse := range map[string]func(string) []string{"lines": ParseLines, "slash": ParseSlashModels, "cursor": ParseCursorModels} {
			seen := map[string]bool{}
			for _, id := range parse(out) {
				if id == "" || strings.ContainsFunc(id, notIDRune) || seen[id] {
					t.Fatalf("%s: bad or duplicate id %q from %q", name, id, out)
				}
				if !strings.Contains(out, id) {
					t.Fatalf("%s: id %q not in the output", name, id)
				}
				seen[id] = true
			}
		}
		v := matchVersion(DefaultVersionPattern, out)
		if v != "" && (!strings.Contains(out, v) || !utf8.ValidString(v) || strings.ContainsAny(v, " \n")) {
			t.Fatalf("version %q from %q", v, out)
		}
	})
}

func BenchmarkModelParsers(b *testing.B) {
	var sb strings.Builder
	for i := range 2000 {
		sb.WriteString("provider")
		sb.WriteString(strings.Repeat("x", i%7))
		sb.WriteString("/model-name-")
		sb.WriteString(strings.Repeat("y", i%11))
		sb.WriteString("\n")
	}
	out := sb.String()
	for name, parse := range map[string]func(string) []string{"lines": ParseLines, "slash": ParseSlashModels, "cursor": ParseCursorModels} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(out)))
			b.ReportAllocs()
			for b.Loop() {
				_ = parse(out)
			}
		})
	}
	b.Run("version", func(b *testing.B) {
		s := "opencode 1.18.33 (linux-x64, built 2026-11-01)\n"
		b.SetBytes(int64(len(s)))
		for b.Loop() {
			_ = matchVersion(DefaultVersionPattern, s)
		}
	})
}
