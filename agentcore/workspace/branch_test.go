package workspace

import (
	"os/exec"
	"strings"
	"testing"
)

const uuid = "3F2A9C1E-77b0-4c1d-9e2f-0123456789ab"

func TestBranchName(t *testing.T) {
	tests := []struct {
		prefix, prompt, id, want string
	}{
		{"threadline/", "Fix the login form", uuid, "threadline/fix-the-login-form-3f2a9c1e"},
		{"threadline/", "  --Add   a *NEW* endpoint!! ", uuid, "threadline/add-a-new-endpoint-3f2a9c1e"},
		{"threadline/", "Überprüfe die Änderung", uuid, "threadline/berpr-fe-die-nderung-3f2a9c1e"},
		{"threadline/", "", uuid, "threadline/chat-3f2a9c1e"},
		{"threadline/", "日本語だけ", uuid, "threadline/chat-3f2a9c1e"},
		{"threadline/", strings.Repeat("abcdefghij ", 10), uuid, "threadline/abcdefghij-abcdefghij-abcdefghij-abcdefg-3f2a9c1e"},
		{"threadline/", strings.Repeat("x", 39) + " y", uuid, "threadline/" + strings.Repeat("x", 39) + "-3f2a9c1e"},
		{"", "fix", uuid, "fix-3f2a9c1e"},
		{"bots/tl", "fix", uuid, "bots/tl/fix-3f2a9c1e"},
		{"/..weird..//x.lock/.hidden/-dash/a b@{c}~^:?*[\\/", "fix", uuid, "weird/x/hidden/dash/a-b-c-/fix-3f2a9c1e"},
		{"threadline/", "fix", "not-a-uuid", "threadline/fix-" + shortID("not-a-uuid")},
	}
	for _, tt := range tests {
		got := BranchName(tt.prefix, tt.prompt, tt.id)
		if got != tt.want {
			t.Errorf("BranchName(%q, %q, %q) = %q, want %q", tt.prefix, tt.prompt, tt.id, got, tt.want)
		}
		if !validBranch(got) {
			t.Errorf("BranchName(%q, %q, %q) = %q: not a valid branch name", tt.prefix, tt.prompt, tt.id, got)
		}
	}
	if id := shortID("not-a-uuid"); len(id) != 8 {
		t.Errorf("shortID of a non-uuid = %q", id)
	}
}

// TestBranchNameGit asks git itself about the names made from awkward input
// (the fuzz seeds), so validBranch's rules are checked against git's.
func TestBranchNameGit(t *testing.T) {
	for _, s := range branchSeeds {
		name := BranchName(s.prefix, s.prompt, s.id)
		out, err := exec.Command("git", "check-ref-format", "--branch", name).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != name {
			t.Errorf("git check-ref-format --branch %q: %v %s", name, err, out)
		}
		if !validBranch(name) {
			t.Errorf("validBranch(%q) = false, git accepts it", name)
		}
	}
	for _, bad := range []string{"a..b", ".a", "a/.b", "a.lock", "a/", "a//b", "-a", "a@{b", "a b", "a~", "a^", "a:", "a?", "a*", "a[", "a\\b", "a.", "@", "HEAD", "a\x7f"} {
		if validBranch(bad) {
			t.Errorf("validBranch(%q) = true", bad)
		}
		if exec.Command("git", "check-ref-format", "--branch", bad).Run() == nil && bad != "HEAD" && bad != "@" { // --branch reads these as HEAD
			t.Errorf("git accepts %q, validBranch refuses it", bad)
		}
	}
}

var branchSeeds = []struct{ prefix, prompt, id string }{
	{"threadline/", "Fix the login form", uuid},
	{"", "", ""},
	{"-", "-", "-"},
	{".", "..", "..."},
	{"a.lock/", "b.lock", "c.lock"},
	{"@{", "@", "@{u}"},
	{"refs/heads/", "HEAD", "HEAD"},
	{"/", "/", "/"},
	{"x.lock.lock./", "z", uuid},
	{"ä/ö", "ü", "ß"},
	{"\x00\x01\x7f", "\t\n", "\r"},
	{"..x../..y..", "...", uuid},
}

// FuzzBranchName checks that any input makes a valid branch name (by git's
// check-ref-format rules, validBranch) ending in the 8-hex-digit id.
func FuzzBranchName(f *testing.F) {
	for _, s := range branchSeeds {
		f.Add(s.prefix, s.prompt, s.id)
	}
	f.Fuzz(func(t *testing.T, prefix, prompt, id string) {
		name := BranchName(prefix, prompt, id)
		if !validBranch(name) {
			t.Fatalf("BranchName(%q, %q, %q) = %q: invalid", prefix, prompt, id, name)
		}
		slug := name[strings.LastIndexByte(name, '/')+1:]
		if len(slug) > maxSlug+9 || slug[len(slug)-9] != '-' {
			t.Fatalf("BranchName(%q, %q, %q) = %q: slug too long or id missing", prefix, prompt, id, name)
		}
	})
}

// validBranch applies git check-ref-format --branch's rules to
// refs/heads/<name>: no part starting with '.' or ending with ".lock", no
// "..", no control character, space, ~ ^ : ? * [ or backslash, no leading,
// trailing or double slash, no trailing '.', no "@{", not "@", not starting
// with '-'.
func validBranch(name string) bool {
	if name == "" || name == "@" || strings.HasPrefix(name, "-") || name == "HEAD" {
		return false
	}
	if strings.Contains(name, "..") || strings.Contains(name, "@{") || strings.HasSuffix(name, ".") {
		return false
	}
	for _, c := range []byte(name) {
		if c < 0x20 || c == 0x7f || strings.IndexByte(" ~^:?*[\\", c) >= 0 {
			return false
		}
	}
	for part := range strings.SplitSeq(name, "/") {
		if part == "" || strings.HasPrefix(part, ".") || strings.HasSuffix(part, ".lock") {
			return false
		}
	}
	return true
}
