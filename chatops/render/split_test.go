package render

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// join undoes Split using the segments, checking the added fence lines.
func join(t *testing.T, s string, limit int) string {
	t.Helper()
	var b strings.Builder
	segs := segments(s, limit)
	for i, sg := range segs {
		b.WriteString(s[sg.start:sg.end])
		part := sg.render(s)
		if len(part) > max(limit, 64) {
			t.Fatalf("part %d is %d bytes, limit %d", i, len(part), limit)
		}
		// The last part shows the input's own fence state (an answer may end
		// inside a fence while it streams); the others must be balanced.
		if i < len(segs)-1 && !balanced(part) {
			t.Fatalf("part %d has unbalanced fences:\n%s", i, part)
		}
	}
	return b.String()
}

// balanced reports whether every fence opened in part is closed.
func balanced(part string) bool {
	state := ""
	for ln := range strings.Lines(part) {
		state = fenceStep(state, strings.TrimSuffix(ln, "\n"))
	}
	return state == ""
}

func TestSplit(t *testing.T) {
	t.Run("short text is one part", func(t *testing.T) {
		if got := Split("hello", 100); len(got) != 1 || got[0] != "hello" {
			t.Fatalf("Split = %q", got)
		}
	})
	t.Run("paragraph boundary preferred", func(t *testing.T) {
		p1 := strings.Repeat("a", 60) + "\n" + strings.Repeat("b", 30) + "\n\n"
		p2 := strings.Repeat("c", 50) + "\n" + strings.Repeat("d", 40)
		got := Split(p1+p2, 120)
		if len(got) != 2 || got[0] != p1 || got[1] != p2 {
			t.Fatalf("Split =\n%q", got)
		}
	})
	t.Run("fence reopened with its info string", func(t *testing.T) {
		code := "```go\n" + strings.Repeat("x := 1\n", 40) + "```\n"
		text := "Intro.\n\n" + code + "\nAfter."
		parts := Split(text, 100)
		if len(parts) < 3 {
			t.Fatalf("expected several parts, got %q", parts)
		}
		for i, p := range parts[1:] {
			if strings.Contains(p, "x := 1") && !strings.HasPrefix(p, "```go\n") {
				t.Fatalf("part %d does not reopen the fence: %q", i+1, p)
			}
		}
		if got := join(t, text, 100); got != text {
			t.Fatalf("joined text differs")
		}
	})
	t.Run("a fence line longer than the part", func(t *testing.T) {
		text := "```" + strings.Repeat("x", 200) + "\ncode\n```\nafter text here\n"
		parts := Split(text, 64)
		for i, p := range parts[:len(parts)-1] {
			if !balanced(p) {
				t.Fatalf("part %d has unbalanced fences: %q", i, p)
			}
		}
		if last := parts[len(parts)-1]; !balanced(last) || !strings.Contains(last, "after text here") {
			t.Fatalf("the text after the fence renders as code: %q", parts)
		}
		if got := join(t, text, 64); got != text {
			t.Fatal("joined text differs")
		}
	})
	t.Run("one long line is cut at rune boundaries", func(t *testing.T) {
		text := strings.Repeat("é", 500)
		parts := Split(text, 100)
		for _, p := range parts {
			if !strings.HasPrefix(p, "é") || strings.ContainsRune(p, '\uFFFD') {
				t.Fatalf("broken rune in %q", p)
			}
		}
		if got := join(t, text, 100); got != text {
			t.Fatal("joined text differs")
		}
	})
}

// TestSplitStable checks that the parts of a growing text never change once a
// later part exists: live streaming and replay split identically.
func TestSplitStable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 30 {
		text := randomMarkdown(rng, 3000)
		limit := 100 + rng.IntN(400)
		final := Split(text, limit)
		if got := join(t, text, limit); got != text {
			t.Fatalf("round %d: joined text differs", round)
		}
		for n := 1; n <= len(text); n += 1 + rng.IntN(17) {
			live := Split(text[:n], limit)
			for i := 0; i < len(live)-1; i++ {
				if live[i] != final[i] {
					t.Fatalf("round %d limit %d: part %d at length %d differs from the final split\nlive  %q\nfinal %q", round, limit, i, n, live[i], final[i])
				}
			}
		}
	}
}

func randomMarkdown(rng *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		switch rng.IntN(6) {
		case 0:
			b.WriteString("\n")
		case 1:
			fmt.Fprintf(&b, "```%s\n", []string{"", "go", "sh"}[rng.IntN(3)])
			for range rng.IntN(20) {
				fmt.Fprintf(&b, "line %d of code\n", rng.IntN(1000))
			}
			b.WriteString("```\n")
		case 2:
			b.WriteString(strings.Repeat("long", 10+rng.IntN(100)) + "\n")
		default:
			fmt.Fprintf(&b, "Some words %d here, and ünïcode.\n", rng.IntN(100))
		}
	}
	return b.String()
}

func FuzzSplit(f *testing.F) {
	f.Add("hello\n\n```go\ncode\n```\nend", 64)
	// A fence line longer than the part (the rest rendered as code).
	f.Add("```"+strings.Repeat("x", 200)+"\ncode\n```\nafter text here\n", 64)
	f.Add("intro\n```"+strings.Repeat("y", 100)+"\n"+strings.Repeat("code line\n", 20)+"```\nafter\n", 80)
	f.Add("```go\n"+strings.Repeat("`", 150)+"\nafter\n", 64)
	f.Fuzz(func(t *testing.T, s string, limit int) {
		limit = 64 + abs(limit)%500
		if got := join(t, s, limit); got != s {
			t.Fatalf("joined text differs")
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
