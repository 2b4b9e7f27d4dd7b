package shipgate_test

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/redact"
	"github.com/threadline-bot/threadline/agentcore/shipgate"
)

// textDiff is a git diff of one file with the hunk lines given.
func textDiff(path, hunkHeader string, lines ...string) string {
	return "diff --git a/" + path + " b/" + path + "\nindex 1111111..2222222 100644\n--- a/" + path + "\n+++ b/" + path + "\n" +
		hunkHeader + "\n" + strings.Join(lines, "\n") + "\n"
}

// newFileDiff is a git diff adding path with content's lines.
func newFileDiff(path string, lines ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "diff --git a/%s b/%s\nnew file mode 100644\nindex 0000000..3333333\n--- /dev/null\n+++ b/%s\n@@ -0,0 +1,%d @@\n", path, path, path, len(lines))
	for _, l := range lines {
		b.WriteString("+" + l + "\n")
	}
	return b.String()
}

// binaryDiff is a git diff --binary of a new binary file with content.
func binaryDiff(path string, content []byte) string {
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	_, _ = w.Write(content)
	_ = w.Close()
	return fmt.Sprintf("diff --git a/%s b/%s\nnew file mode 100644\nindex 0000000..4444444\nGIT binary patch\nliteral %d\n%s\nliteral 0\nHcmV?d00001\n\n",
		path, path, len(content), base85Lines(z.Bytes()))
}

// base85Lines encodes data as git's binary hunk lines (52 bytes a line).
func base85Lines(data []byte) string {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"
	var b strings.Builder
	for len(data) > 0 {
		n := min(len(data), 52)
		if n <= 26 {
			b.WriteByte(byte('A' + n - 1))
		} else {
			b.WriteByte(byte('a' + n - 27))
		}
		chunk := data[:n]
		data = data[n:]
		for i := 0; i < len(chunk); i += 4 {
			var v uint32
			for j := range 4 {
				v <<= 8
				if i+j < len(chunk) {
					v |= uint32(chunk[i+j])
				}
			}
			var enc [5]byte
			for k := 4; k >= 0; k-- {
				enc[k] = alphabet[v%85]
				v /= 85
			}
			b.Write(enc[:])
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func secrets() shipgate.Secrets { return redact.New(botToken, projectSecret) }

func TestCheckRules(t *testing.T) {
	big := bytes.Repeat([]byte{0, 1, 2, 3}, 300) // 1200 bytes, binary
	for _, tc := range []struct {
		name string
		diff string
		opts shipgate.Options
		want []string // "file:line:rule"
	}{
		{"secret value added",
			textDiff("config.yaml", "@@ -1,2 +1,3 @@", " name: web", "+token: "+botToken, " port: 80"),
			shipgate.Options{Secrets: secrets()}, []string{"config.yaml:2:secret-value"}},
		{"secret value in a new file, line 3",
			newFileDiff(".env", "A=1", "B=2", "SECRET="+projectSecret),
			shipgate.Options{Secrets: secrets()}, []string{".env:3:secret-value"}},
		{"near: secret value removed",
			textDiff("config.yaml", "@@ -1,3 +1,2 @@", " name: web", "-token: "+botToken, " port: 80"),
			shipgate.Options{Secrets: secrets()}, nil},
		{"near: secret value in context",
			textDiff("config.yaml", "@@ -1,2 +1,3 @@", " token: "+botToken, "+port: 80", " x: y"),
			shipgate.Options{Secrets: secrets()}, nil},
		{"near: secret value with a character changed",
			newFileDiff("a.txt", botToken[:len(botToken)-1]+"_"),
			shipgate.Options{Secrets: secrets()}, nil},
		{"near: no secrets configured",
			newFileDiff("a.txt", botToken), shipgate.Options{}, nil},
		{"pattern in a modified file",
			textDiff("deploy.sh", "@@ -10,3 +10,4 @@", " set -e", "-export OLD=1", "+export GITHUB_TOKEN="+fakeGitHub, "+echo ok", " run"),
			shipgate.Options{}, []string{"deploy.sh:11:github-token"}},
		{"near: pattern removed",
			textDiff("deploy.sh", "@@ -10,2 +10,1 @@", " set -e", "-export GITHUB_TOKEN="+fakeGitHub),
			shipgate.Options{}, nil},
		{"secret and pattern on one line",
			newFileDiff("a.txt", botToken+" "+fakeAWS),
			shipgate.Options{Secrets: secrets()}, []string{"a.txt:1:aws-access-key", "a.txt:1:secret-value"}},
		{"binary over the limit",
			binaryDiff("model.bin", big), shipgate.Options{MaxSize: 1000}, []string{"model.bin:0:size-limit"}},
		{"near: binary at the limit",
			binaryDiff("model.bin", big), shipgate.Options{MaxSize: 1200}, nil},
		{"binary holding a secret",
			binaryDiff("db.sqlite", append(append([]byte{0, 0, 1}, botToken...), 0, 9)),
			shipgate.Options{Secrets: secrets()}, []string{"db.sqlite:0:secret-value"}},
		{"binary holding a pattern",
			binaryDiff("app.pyc", append([]byte{0, 0, 1, ' '}, fakeSlackBot+" \x00"...)),
			shipgate.Options{}, []string{"app.pyc:0:slack-token"}},
		{"text file over the limit",
			newFileDiff("dump.sql", strings.Repeat("x", 600), strings.Repeat("y", 600)),
			shipgate.Options{MaxSize: 1000}, []string{"dump.sql:0:size-limit"}},
		{"near: no limit",
			binaryDiff("model.bin", big), shipgate.Options{MaxSize: -1}, nil},
		{"binary of unknown size",
			"diff --git a/logo.png b/logo.png\nnew file mode 100644\nindex 0000000..5555555\nBinary files /dev/null and b/logo.png differ\n",
			shipgate.Options{}, []string{"logo.png:0:unknown-size"}},
		{"near: deleted binary",
			"diff --git a/logo.png b/logo.png\ndeleted file mode 100644\nindex 5555555..0000000\nBinary files a/logo.png and /dev/null differ\n",
			shipgate.Options{}, nil},
		{"near: deleted file with a secret",
			"diff --git a/old.env b/old.env\ndeleted file mode 100644\nindex 1111111..0000000\n--- a/old.env\n+++ /dev/null\n@@ -1 +0,0 @@\n-T=" + botToken + "\n",
			shipgate.Options{Secrets: secrets()}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, err := shipgate.CheckDiff([]byte(tc.diff), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range fs {
				got = append(got, fmt.Sprintf("%s:%d:%s", f.File, f.Line, f.Rule))
				if f.Reason == "" {
					t.Errorf("finding %+v has no reason", f)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("findings %v, want %v\n%v", got, tc.want, fs)
			}
		})
	}
}

// TestCheckSizes: sizes the caller gives count; text files of unknown size
// count by what they add.
func TestCheckSizes(t *testing.T) {
	files := []shipgate.File{
		{Path: "a.bin", Binary: true, Size: 6 << 20},
		{Path: "b.bin", Binary: true, Size: 5 << 20},
		{Path: "c.txt", Size: 7<<20 + 300<<10, Added: []shipgate.Block{{Line: 4, Text: "one line\n"}}},
		{Path: "d.txt", Size: -1, Added: []shipgate.Block{{Line: 1, Text: strings.Repeat("z", 5<<20+1)}}},
		{Path: "e.bin", Binary: true, Size: -1},
		{Path: "f.bin", Binary: true, Size: -1, Deleted: true},
	}
	var got []string
	for _, f := range shipgate.Check(files, shipgate.Options{}) {
		got = append(got, f.File+" "+string(f.Rule)+" "+f.Reason)
	}
	want := []string{
		"a.bin size-limit is 6 MB, over the 5 MB limit",
		"c.txt size-limit is 7.3 MB, over the 5 MB limit",
		"d.txt size-limit is 5 MB, over the 5 MB limit",
		"e.bin unknown-size is a binary file whose size the diff does not give (make it with git diff --binary)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestExcerptHoldsNoSecret: whatever the line, the excerpt of its finding
// holds no piece of the secret (MinCutLen bytes or more), masks it, and
// keeps the text around it.
func TestExcerptHoldsNoSecret(t *testing.T) {
	all := []string{botToken, projectSecret, fakeGitHub, fakeGitHubPAT, fakeAWS, fakeSlackBot, fakeSlackApp, fakeAnthropic, fakeOpenAI, fakeOpenAIOld}
	long := strings.Repeat("lorem ipsum ", 30)
	for _, secret := range all {
		for _, line := range []string{
			secret,
			"key = \"" + secret + "\" # " + long,
			long + secret,
			long + secret + " " + long,
			"a=" + secret + " b=" + botToken + " c=" + fakeAWS,
			"\tcontrol\x1b[31m " + secret + "\x01\r",
		} {
			fs := shipgate.Check([]shipgate.File{shipgate.NewFile("f.txt", []byte("first\n"+line+"\nlast\n"))}, shipgate.Options{Secrets: secrets()})
			if len(fs) == 0 {
				t.Errorf("no finding for %q", line)
				continue
			}
			for _, f := range fs {
				if f.Line != 2 {
					t.Errorf("finding on line %d, want 2: %v", f.Line, f)
				}
				for _, s := range all {
					if p := piece(f.Excerpt, s); p != "" {
						t.Errorf("excerpt %q holds %q of a secret", f.Excerpt, p)
					}
				}
				if !strings.Contains(f.Excerpt, "[") || len(f.Excerpt) > 130 {
					t.Errorf("excerpt %q: no mask or too long", f.Excerpt)
				}
				if strings.ContainsAny(f.Excerpt, "\x00\x1b\t\n") {
					t.Errorf("excerpt %q holds control characters", f.Excerpt)
				}
			}
		}
	}
	fs := shipgate.Check([]shipgate.File{shipgate.NewFile("deploy.sh", []byte("export GITHUB_TOKEN="+fakeGitHub+"\n"))}, shipgate.Options{})
	if len(fs) != 1 || fs[0].String() != "deploy.sh:1: holds a GitHub token (github-token): export GITHUB_TOKEN=[github-token]" {
		t.Errorf("findings %v", fs)
	}
}

// piece returns the longest piece of secret (redact.MinCutLen+4 bytes or
// more) found in s.
func piece(s, secret string) string {
	for n := len(secret); n >= redact.MinCutLen+4; n-- {
		for i := 0; i+n <= len(secret); i++ {
			if strings.Contains(s, secret[i:i+n]) {
				return secret[i : i+n]
			}
		}
	}
	return ""
}

func TestNewFile(t *testing.T) {
	f := shipgate.NewFile("a.txt", []byte("x\ny\n"))
	if f.Binary || f.Size != 4 || len(f.Added) != 1 || f.Added[0].Line != 1 {
		t.Errorf("text file %+v", f)
	}
	b := shipgate.NewFile("a.bin", []byte{1, 0, 2})
	if !b.Binary || b.Size != 3 || b.Added[0].Line != 0 {
		t.Errorf("binary file %+v", b)
	}
	if e := shipgate.NewFile("empty", nil); e.Size != 0 || e.Added != nil {
		t.Errorf("empty file %+v", e)
	}
}
