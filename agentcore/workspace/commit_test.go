package workspace

import (
	"errors"
	"path/filepath"
	"testing"
)

func TestCommitMessage(t *testing.T) {
	co := "Co-authored-by: Ann <ann@example.com>"
	req := "Requested-by: ann (slack:U123)"
	tests := []struct {
		name     string
		msg      string
		trailers []string
		want     string
	}{
		{"plain", "Fix login", nil, "Fix login\n"},
		{"trailers", "Fix login\n", []string{co, req}, "Fix login\n\n" + co + "\n" + req + "\n"},
		{"body", "Fix login\n\nThe form lost its state.", []string{req}, "Fix login\n\nThe form lost its state.\n\n" + req + "\n"},
		{"own block", "Fix login\n\nSigned-off-by: Bob <b@x>", []string{req}, "Fix login\n\nSigned-off-by: Bob <b@x>\n" + req + "\n"},
		{"duplicate", "Fix login\n\n" + req, []string{req}, "Fix login\n\n" + req + "\n"},
		{"subject looks like one", "Note: fix login", []string{req}, "Note: fix login\n\n" + req + "\n"},
	}
	for _, tt := range tests {
		got, err := commitMessage(tt.msg, tt.trailers)
		if err != nil || got != tt.want {
			t.Errorf("%s: commitMessage = %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
	for _, bad := range []struct {
		msg      string
		trailers []string
	}{
		{"", nil},
		{"  \n", nil},
		{"x", []string{"no colon"}},
		{"x", []string{"Bad token: v"}},
		{"x", []string{"Token: two\nlines"}},
		{"x", []string{"Token: "}},
	} {
		if _, err := commitMessage(bad.msg, bad.trailers); !errors.Is(err, ErrInvalid) {
			t.Errorf("commitMessage(%q, %q) = %v, want ErrInvalid", bad.msg, bad.trailers, err)
		}
	}
}

func TestCommit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{Name: "Threadline Bot", Email: "bot@example.com"})
	ctx := t.Context()
	wt := f.create("a")
	if id, err := f.g.Commit(ctx, wt, CommitOptions{Message: "nothing"}); err != nil || id != "" {
		t.Errorf("Commit of a clean tree = %q, %v", id, err)
	}
	writeFile(t, wt.Dir, "src/app.go", "changed\n")
	writeFile(t, wt.Dir, "new/file.txt", "new\n")
	writeFile(t, wt.Dir, ".env", "ignored\n")
	id, err := f.g.Commit(ctx, wt, CommitOptions{
		Message:  "Change the app",
		Trailers: []string{"Co-authored-by: Ann <ann@example.com>", "Requested-by: ann (slack:U123)"},
	})
	if err != nil || id == "" {
		t.Fatalf("Commit = %q, %v", id, err)
	}
	if got := gitT(t, wt.Dir, "log", "-1", "--format=%an <%ae>|%cn <%ce>"); got != "Threadline Bot <bot@example.com>|Threadline Bot <bot@example.com>" {
		t.Errorf("identity %q", got)
	}
	if got := gitT(t, wt.Dir, "log", "-1", "--format=%(trailers:key=Co-authored-by,valueonly)"); got != "Ann <ann@example.com>" {
		t.Errorf("git reads Co-authored-by as %q", got)
	}
	if got := gitT(t, wt.Dir, "log", "-1", "--format=%(trailers:key=Requested-by,valueonly)"); got != "ann (slack:U123)" {
		t.Errorf("git reads Requested-by as %q", got)
	}
	if got := gitT(t, wt.Dir, "show", "--name-only", "--format=", id); got != "new/file.txt\nsrc/app.go" {
		t.Errorf("committed files %q", got)
	}
	if st := gitT(t, wt.Dir, "status", "--porcelain"); st != "" {
		t.Errorf("left uncommitted: %q", st)
	}

	writeFile(t, wt.Dir, "README.md", "again\n")
	id2, err := f.g.Commit(ctx, wt, CommitOptions{Message: "By Ann", AuthorName: "Ann", AuthorEmail: "ann@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if got := gitT(t, wt.Dir, "log", "-1", "--format=%an|%cn", id2); got != "Ann|Ann" {
		t.Errorf("identity %q", got)
	}
	f.assertMainUntouched()
}

// TestHooksDoNotRun: a hook the agent wrote into the repository never runs
// as the bot.
func TestHooksDoNotRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	marker := filepath.Join(t.TempDir(), "ran")
	hooks := fakeHelper(t, "pre-commit", "touch "+marker+"\n")
	wt := f.create("a")
	gitT(t, wt.Dir, "config", "core.hooksPath", hooks) // the agent's own config
	writeFile(t, wt.Dir, "x.txt", "x\n")
	if _, err := f.g.Commit(t.Context(), wt, CommitOptions{Message: "x"}); err != nil {
		t.Fatal(err)
	}
	if fileExists(marker) {
		t.Error("the repository's pre-commit hook ran")
	}
	gitT(t, wt.Dir, "commit", "-q", "--allow-empty", "-m", "plain git runs it")
	if !fileExists(marker) {
		t.Error("the hook is not live: the test proves nothing")
	}
}
