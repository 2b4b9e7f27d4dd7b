package shipgate_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/shipgate"
)

// gitIn runs git in dir without user or system config.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t.invalid")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}

func write(t *testing.T, dir, name string, data []byte) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed+1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// TestParseGitDiff reads what git itself prints for a branch with every kind
// of change, with and without --binary.
func TestParseGitDiff(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	gitIn(t, dir, "init", "--quiet", "-b", "main")
	lines := func(n int, f string) string {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&b, f+"\n", i)
		}
		return b.String()
	}
	blob := randomBytes(40000, 1)
	write(t, dir, "app/main.go", []byte(lines(30, "line %d")))
	write(t, dir, "old.env", []byte("TOKEN="+botToken+"\n"))
	write(t, dir, "blob.bin", blob)
	write(t, dir, "keep me.txt", []byte(lines(5, "keep %d")))
	gitIn(t, dir, "add", ".")
	gitIn(t, dir, "commit", "--quiet", "-m", "base")
	gitIn(t, dir, "checkout", "--quiet", "-b", "chat-1")

	// main.go: line 3 replaced by the token, two lines added after line 20.
	main := strings.Split(lines(30, "line %d"), "\n")
	main[2] = "token := \"" + fakeGitHub + "\""
	main = slices.Insert(main, 20, "added a", "added b "+projectSecret)
	write(t, dir, "app/main.go", []byte(strings.Join(main, "\n")))
	if err := os.Remove(filepath.Join(dir, "old.env")); err != nil {
		t.Fatal(err)
	}
	blob2 := append([]byte(nil), blob...)
	copy(blob2[1000:], "xo"+"xb-") // a small change: git sends a delta
	blob2 = append(blob2, 1, 2, 3) // and a new size
	write(t, dir, "blob.bin", blob2)
	newBin := randomBytes(3000, 2)
	write(t, dir, "img/ïcon.png", newBin)
	write(t, dir, "new.txt", []byte("one\ntwo "+fakeAWS)) // no final newline
	gitIn(t, dir, "mv", "keep me.txt", "kept\there.txt")
	gitIn(t, dir, "add", "-A")
	gitIn(t, dir, "commit", "--quiet", "-m", "work")

	diff := gitIn(t, dir, "diff", "--binary", "--no-color", "--find-renames", "main...chat-1")
	if !strings.Contains(diff, "\ndelta ") {
		t.Error("git sent no binary delta; the test does not cover one")
	}
	files, err := shipgate.ParseDiff([]byte(diff))
	if err != nil {
		t.Fatalf("%v\n%s", err, diff)
	}
	got := map[string]shipgate.File{}
	for _, f := range files {
		got[f.Path] = f
	}
	if len(files) != 6 {
		t.Errorf("%d files: %v", len(files), slices.Collect(mapKeys(got)))
	}
	if m := got["app/main.go"]; m.Binary || m.Size != -1 || !slices.Equal(blocks(m), []string{
		"3:token := \"" + fakeGitHub + "\"\n",
		"21:added a\nadded b " + projectSecret + "\n",
	}) {
		t.Errorf("app/main.go: %+v", m)
	}
	if f := got["old.env"]; !f.Deleted || f.Added != nil {
		t.Errorf("old.env: %+v", f)
	}
	if f := got["blob.bin"]; !f.Binary || f.Size != int64(len(blob2)) || len(f.Added) != 1 || !strings.Contains(f.Added[0].Text, "xo"+"xb-") {
		t.Errorf("blob.bin (delta): binary %v size %d, want %d; %d blocks", f.Binary, f.Size, len(blob2), len(f.Added))
	}
	if f := got["img/ïcon.png"]; !f.Binary || f.Size != 3000 || len(f.Added) != 1 || f.Added[0].Text != string(newBin) {
		t.Errorf("img/ïcon.png: binary %v size %d", f.Binary, f.Size)
	}
	if f := got["new.txt"]; f.Size != int64(len("one\ntwo "+fakeAWS)) || !slices.Equal(blocks(f), []string{"1:one\ntwo " + fakeAWS}) {
		t.Errorf("new.txt: %+v", f)
	}
	if f, ok := got["kept\there.txt"]; !ok || len(f.Added) != 0 {
		t.Errorf("the renamed file: %+v (%v)", f, ok)
	}

	var rules []string
	for _, f := range shipgate.Check(files, shipgate.Options{Secrets: secrets()}) {
		rules = append(rules, fmt.Sprintf("%s:%d:%s", f.File, f.Line, f.Rule))
	}
	want := []string{"app/main.go:3:github-token", "app/main.go:22:secret-value", "new.txt:2:aws-access-key"}
	if !slices.Equal(rules, want) {
		t.Errorf("findings %v, want %v", rules, want)
	}

	// With --no-prefix (or diff.noprefix set): the same files.
	np, err := shipgate.ParseDiff([]byte(gitIn(t, dir, "diff", "--binary", "--no-color", "--no-prefix", "--find-renames", "main...chat-1")))
	if err != nil {
		t.Fatal(err)
	}
	if len(np) != len(files) {
		t.Errorf("--no-prefix: %d files, want %d", len(np), len(files))
	}
	for i := range min(len(np), len(files)) {
		a, b := np[i], files[i]
		if a.Path != b.Path || a.Size != b.Size || a.Deleted != b.Deleted || !slices.Equal(blocks(a), blocks(b)) {
			t.Errorf("--no-prefix: %s %d, want %s %d", a.Path, a.Size, b.Path, b.Size)
		}
	}

	// Without --binary: the binary files' sizes are unknown.
	plain := gitIn(t, dir, "diff", "--no-color", "main...chat-1")
	fs, err := shipgate.CheckDiff([]byte(plain), shipgate.Options{Secrets: secrets()})
	if err != nil {
		t.Fatal(err)
	}
	rules = nil
	for _, f := range fs {
		rules = append(rules, fmt.Sprintf("%s:%d:%s", f.File, f.Line, f.Rule))
	}
	want = []string{"app/main.go:3:github-token", "app/main.go:22:secret-value", "blob.bin:0:unknown-size", "img/ïcon.png:0:unknown-size", "new.txt:2:aws-access-key"}
	if !slices.Equal(rules, want) {
		t.Errorf("without --binary: findings %v, want %v", rules, want)
	}
}

func blocks(f shipgate.File) []string {
	var out []string
	for _, b := range f.Added {
		out = append(out, fmt.Sprintf("%d:%s", b.Line, b.Text))
	}
	return out
}

func mapKeys(m map[string]shipgate.File) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func TestParseDiffCases(t *testing.T) {
	for _, tc := range []struct {
		name string
		diff string
		want []string // "path|deleted|binary|size|blocks..."
	}{
		{"empty", "", nil},
		{"plain unified diff", "--- a.txt\t2024-01-01 10:00:00\n+++ a.txt\t2024-01-02 10:00:00\n@@ -1,2 +1,2 @@\n-x\n+y\n z\n--- b.txt\n+++ b.txt\n@@ -5 +5,2 @@\n q\n+r\n",
			[]string{"a.txt|false|false|-1|1:y\n", "b.txt|false|false|-1|6:r\n"}},
		{"hunk count left out", "diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1 +1 @@\n-x\n+y\n", []string{"a|false|false|-1|1:y\n"}},
		{"lines looking like headers inside a hunk", "diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1,2 +1,2 @@\n--- x\n-+++ y\n++++ z\n+--- w\n",
			[]string{"a|false|false|-1|1:+++ z\n--- w\n"}},
		{"no newline at the end", "diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1 +1 @@\n-x\n\\ No newline at end of file\n+y\n\\ No newline at end of file\n",
			[]string{"a|false|false|-1|1:y"}},
		{"empty context line", "diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1,3 +1,3 @@\n x\n\n-y\n+z\n", []string{"a|false|false|-1|3:z\n"}},
		{"quoted path", "diff --git \"a/\\303\\244 b\" \"b/\\303\\244 b\"\nnew file mode 100644\n--- /dev/null\n+++ \"b/\\303\\244 b\"\n@@ -0,0 +1 @@\n+hi\n",
			[]string{"ä b|false|false|3|1:hi\n"}},
		{"mode change only", "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n", []string{"run.sh|false|false|-1|"}},
		{"copy", "diff --git a/x b/y\nsimilarity index 100%\ncopy from x\ncopy to y\n", []string{"y|false|false|-1|"}},
		{"no prefixes", "diff --git b/c.go b/c.go\nindex 1..2 100644\n--- b/c.go\n+++ b/c.go\n@@ -1 +1 @@\n-a\n+b\n", []string{"b/c.go|false|false|-1|1:b\n"}},
		{"deleted, no prefixes", "diff --git x x\ndeleted file mode 100644\n--- x\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n", []string{"x|true|false|-1|"}},
		{"rename with spaces", "diff --git a/x y b/z w\nsimilarity index 100%\nrename from x y\nrename to z w\n", []string{"z w|false|false|-1|"}},
		{"commit message first", "From abc Mon Sep 17 00:00:00 2001\nSubject: [PATCH] x\n\n+not a diff line\n---\n a | 1 +\n\ndiff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -0,0 +1 @@\n+q\n-- \n2.39.5\n",
			[]string{"a|false|false|-1|1:q\n"}},
		{"two hunks, removed lines do not split a block", "diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1,3 +1,3 @@\n+p\n-x\n+q\n y\n-z\n@@ -10,1 +10,2 @@\n k\n+l\n",
			[]string{"a|false|false|-1|1:p\nq\n|11:l\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files, err := shipgate.ParseDiff([]byte(tc.diff))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range files {
				got = append(got, fmt.Sprintf("%s|%v|%v|%d|%s", f.Path, f.Deleted, f.Binary, f.Size, strings.Join(blocks(f), "|")))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("files\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// TestParseDiffRefuses: what the gate cannot read is an error, never a pass.
func TestParseDiffRefuses(t *testing.T) {
	for name, diff := range map[string]string{
		"not a diff":         "hello\nworld\n",
		"a diffstat":         " a.txt | 2 +-\n 1 file changed\n",
		"colours":            "\x1b[1mdiff --git a/a b/a\x1b[m\n",
		"hunk cut short":     "diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1,2 +1,3 @@\n x\n+y\n",
		"too many lines":     "diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1 +1 @@\n+y\n+z\n",
		"added line outside": "diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1 +1 @@\n-x\n+y\n+z\n",
		"bad hunk header":    "diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -x +1 @@\n+y\n",
		"odd hunk line":      "diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1 +1 @@\n*y\n",
		"combined diff":      "diff --cc a\nindex 1,2..3\n@@@ -1,1 -1,1 +1,1 @@@\n",
		"broken binary":      "diff --git a/b b/b\nGIT binary patch\nliteral 10\nzzzz\n\n",
		"binary size lies":   "diff --git a/b b/b\nGIT binary patch\nliteral 99\n" + strings.TrimPrefix(binaryDiff("b", []byte("abc")), "diff --git a/b b/b\nnew file mode 100644\nindex 0000000..4444444\nGIT binary patch\nliteral 3\n"),
		"hunk without file":  "@@ -1 +1 @@\n+x\n",
	} {
		if files, err := shipgate.ParseDiff([]byte(diff)); !errors.Is(err, shipgate.ErrMalformedDiff) {
			t.Errorf("%s: files %+v, err %v; want ErrMalformedDiff", name, files, err)
		}
	}
}
