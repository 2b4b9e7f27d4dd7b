// Chunker and brain-directory tests, fuzz and benchmark.

package plain

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func feedAll(chunks ...string) string {
	var c chunker
	var b strings.Builder
	for _, ch := range chunks {
		b.WriteString(c.feed([]byte(ch)))
	}
	b.WriteString(c.flush())
	return b.String()
}

func TestChunker(t *testing.T) {
	for _, tc := range []struct {
		name   string
		chunks []string
		want   string
	}{
		{"markdown and blank lines", []string{"# Title\n\n", "para one\n\n\n- item\n"}, "# Title\n\npara one\n\n\n- item\n"},
		{"utf8 split", []string{"h\xc3", "\xa9llo \xe2\x82", "\xac"}, "héllo €"},
		{"csi split", []string{"a\x1b[3", "1mred\x1b[0m b"}, "ared b"},
		{"osc", []string{"x\x1b]0;title\x07y\x1b]8;;http://e\x1b\\z"}, "xyz"},
		{"two-byte esc", []string{"a\x1b7b\x1b", "8c"}, "abc"},
		{"carriage returns", []string{"line\r\n", "spin\rdone\n"}, "line\nspindone\n"},
		{"dangling esc at eof", []string{"end\x1b["}, "end"},
		{"dangling rune at eof", []string{"end\xe2\x82"}, "end\xe2\x82"},
	} {
		if got := feedAll(tc.chunks...); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	// A runaway escape sequence is not held forever.
	var c chunker
	out := c.feed([]byte("\x1b[" + strings.Repeat("1;", maxPending)))
	if len(c.pending) != 0 || out == "" {
		t.Errorf("runaway escape held: pending %d, out %d", len(c.pending), len(out))
	}
}

func TestTailBuffer(t *testing.T) {
	tb := &tailBuffer{max: 8}
	_, _ = tb.Write([]byte("0123456789"))
	_, _ = tb.Write([]byte("é!"))
	if got := tb.String(); got != "56789é!" {
		t.Errorf("tail = %q", got)
	}
	tb = &tailBuffer{max: 3}
	_, _ = tb.Write([]byte("é!x")) // the cut splits é: its continuation byte is dropped
	if got := tb.String(); got != "!x" {
		t.Errorf("tail = %q", got)
	}
	tb = &tailBuffer{max: 64}
	_, _ = tb.Write([]byte("\x1b[31merror\x1b[0m: boom"))
	if got := tb.String(); got != "error: boom" {
		t.Errorf("tail keeps escapes: %q", got)
	}
}

func TestBrainSnapshot(t *testing.T) {
	dir := t.TempDir()
	mk := func(name string) {
		if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mk("old-session")
	mk(".hidden")
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	before := snapshot(dir)
	if len(before) != 1 || !before["old-session"] {
		t.Fatalf("before = %v", before)
	}
	mk("3f2a-new")
	if err := os.Symlink(t.TempDir(), filepath.Join(dir, "linked")); err != nil {
		t.Fatal(err)
	}
	after := snapshot(dir)
	if id, n := newSession(before, after); id != "3f2a-new" || n != 1 {
		t.Fatalf("newSession = %q, %d", id, n)
	}
	mk("another")
	if id, n := newSession(before, snapshot(dir)); id != "" || n != 2 {
		t.Fatalf("two new dirs: %q, %d", id, n)
	}
	if id, n := newSession(before, before); id != "" || n != 0 {
		t.Fatalf("no new dir: %q, %d", id, n)
	}
	if len(snapshot(filepath.Join(dir, "missing"))) != 0 {
		t.Error("missing dir not empty")
	}
	for _, bad := range []string{"", ".", "..", "a/b", `a\b`, "x..y", ".git"} {
		if ValidSessionDir(bad) {
			t.Errorf("ValidSessionDir(%q)", bad)
		}
	}
}

// FuzzChunker: however the output is split into reads, the emitted text is
// the same, and valid UTF-8 in gives valid UTF-8 out.
func FuzzChunker(f *testing.F) {
	for _, s := range []string{"# T\n\nbody\n", "h\xc3\xa9\x1b[31mx\x1b[0m\r\n", "\x1b]0;t\x07€", "plain"} {
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, in []byte, step uint8) {
		whole := feedAll(string(in))
		n := int(step%17) + 1
		var parts []string
		for i := 0; i < len(in); i += n {
			parts = append(parts, string(in[i:min(i+n, len(in))]))
		}
		if split := feedAll(parts...); split != whole {
			t.Fatalf("split by %d: %q != %q", n, split, whole)
		}
		if utf8.Valid(in) && !bytes.ContainsRune(in, 0x1b) && !utf8.ValidString(whole) {
			t.Fatalf("invalid UTF-8 out of valid input: %q", whole)
		}
		if len(whole) > len(in) {
			t.Fatalf("output grew: %d > %d", len(whole), len(in))
		}
	})
}

func BenchmarkChunker(b *testing.B) {
	chunk := []byte(strings.Repeat("Some **Markdown** text with ünïcödé and \x1b[1mbold\x1b[0m.\n\n", 512))
	b.SetBytes(int64(len(chunk)))
	b.ReportAllocs()
	for b.Loop() {
		var c chunker
		_ = c.feed(chunk)
	}
}
