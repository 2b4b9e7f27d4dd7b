package shipgate_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/shipgate"
)

// renderHunks writes files' added blocks as a git diff, one hunk a block
// (old count 0), marking a last line without "\n".
func renderHunks(files []shipgate.File) string {
	var b strings.Builder
	for _, f := range files {
		if f.Binary || f.Deleted || len(f.Added) == 0 {
			continue
		}
		p := strconv.Quote("b/" + f.Path)
		fmt.Fprintf(&b, "diff --git %s %s\n--- %s\n+++ %s\n", strconv.Quote("a/"+f.Path), p, strconv.Quote("a/"+f.Path), p)
		for _, blk := range f.Added {
			text := blk.Text
			eol := strings.HasSuffix(text, "\n")
			lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
			fmt.Fprintf(&b, "@@ -1,0 +%d,%d @@\n", blk.Line, len(lines))
			for _, l := range lines {
				b.WriteString("+" + l + "\n")
			}
			if !eol {
				b.WriteString("\\ No newline at end of file\n")
			}
		}
	}
	return b.String()
}

// FuzzParseDiff: any input parses or fails with ErrMalformedDiff, never
// panics; what parses has sane blocks, checks without panicking, and
// written back as hunks parses to the same blocks.
func FuzzParseDiff(f *testing.F) {
	for _, seed := range []string{
		"",
		textDiff("config.yaml", "@@ -1,2 +1,3 @@", " name: web", "+token: "+botToken, " port: 80"),
		newFileDiff(".env", "A=1", "SECRET="+projectSecret, fakeGitHub),
		binaryDiff("model.bin", []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}),
		"--- a.txt\n+++ a.txt\n@@ -1,2 +1,2 @@\n-x\n+y\n z\n",
		"diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1 +1 @@\n-x\n\\ No newline at end of file\n+y\n\\ No newline at end of file\n",
		"diff --git \"a/\\303\\244 b\" \"b/\\303\\244 b\"\nnew file mode 100644\n--- /dev/null\n+++ \"b/\\303\\244 b\"\n@@ -0,0 +1 @@\n+hi\n",
		"diff --git a/x y b/z w\nsimilarity index 100%\nrename from x y\nrename to z w\n",
		"diff --git a/logo.png b/logo.png\nnew file mode 100644\nBinary files /dev/null and b/logo.png differ\n",
		"diff --git a/b b/b\nGIT binary patch\ndelta 14\nVcmZo*`1AH_\n\n",
	} {
		f.Add([]byte(seed))
	}
	opts := shipgate.Options{Secrets: secrets(), MaxSize: 100}
	f.Fuzz(func(t *testing.T, data []byte) {
		files, err := shipgate.ParseDiff(data)
		if err != nil {
			if !errors.Is(err, shipgate.ErrMalformedDiff) {
				t.Fatalf("error %v does not wrap ErrMalformedDiff", err)
			}
			return
		}
		for _, file := range files {
			for _, blk := range file.Added {
				if blk.Text == "" || blk.Line < 0 || (!file.Binary && blk.Line == 0) {
					t.Fatalf("file %q: block %+v", file.Path, blk)
				}
			}
			if file.Deleted && file.Added != nil {
				t.Fatalf("deleted file %q adds %d blocks", file.Path, len(file.Added))
			}
		}
		for _, fd := range shipgate.Check(files, opts) {
			if strings.Contains(fd.Excerpt, botToken) || strings.Contains(fd.Excerpt, projectSecret) {
				t.Fatalf("excerpt %q holds a secret", fd.Excerpt)
			}
		}
		again, err := shipgate.ParseDiff([]byte(renderHunks(files)))
		if err != nil {
			t.Fatalf("the written-back hunks do not parse: %v\n%s", err, renderHunks(files))
		}
		var want, got []string
		for _, file := range files {
			if !file.Binary && !file.Deleted && len(file.Added) > 0 {
				want = append(want, file.Path+"|"+strings.Join(blocks(file), "|"))
			}
		}
		for _, file := range again {
			got = append(got, file.Path+"|"+strings.Join(blocks(file), "|"))
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("round trip:\n%q\nwant\n%q", got, want)
		}
	})
}

// FuzzNewFile: a new file's content comes back whole from its diff, with
// its size.
func FuzzNewFile(f *testing.F) {
	for _, seed := range []string{"", "x", "a\nb\n", "no newline", "\n\n", "+++ x\n--- y\n@@ -1 +1 @@\n", "\\ No newline\n"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, content string) {
		if strings.ContainsRune(content, 0x1b) {
			return // a terminal escape makes the diff unreadable on purpose
		}
		var b strings.Builder
		lines := strings.Split(strings.TrimSuffix(content, "\n"), "\n")
		if content == "" {
			lines = nil
		}
		fmt.Fprintf(&b, "diff --git a/f b/f\nnew file mode 100644\n")
		if len(lines) > 0 {
			fmt.Fprintf(&b, "--- /dev/null\n+++ b/f\n@@ -0,0 +1,%d @@\n", len(lines))
			for _, l := range lines {
				b.WriteString("+" + l + "\n")
			}
			if !strings.HasSuffix(content, "\n") {
				b.WriteString("\\ No newline at end of file\n")
			}
		}
		files, err := shipgate.ParseDiff([]byte(b.String()))
		if err != nil {
			t.Fatalf("%v\n%q", err, b.String())
		}
		if len(files) != 1 || files[0].Path != "f" || files[0].Size != int64(len(content)) {
			t.Fatalf("files %+v", files)
		}
		var text string
		for _, blk := range files[0].Added {
			text += blk.Text
		}
		if text != content {
			t.Fatalf("content %q, want %q", text, content)
		}
	})
}
