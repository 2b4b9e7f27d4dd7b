package forge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/forge"
	"github.com/threadline-bot/threadline/agentcore/forge/giteatest"
)

// git runs git in dir with a fixed identity and no user or system config.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=Threadline Test", "GIT_AUTHOR_EMAIL=test@threadline.invalid",
		"GIT_COMMITTER_NAME=Threadline Test", "GIT_COMMITTER_EMAIL=test@threadline.invalid")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// pushBranch clones cloneURL, commits a file on a new branch and pushes it.
func pushBranch(t *testing.T, cloneURL, branch string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "clone")
	git(t, filepath.Dir(dir), "clone", "--quiet", cloneURL, dir)
	git(t, dir, "checkout", "--quiet", "-b", branch)
	if err := os.WriteFile(filepath.Join(dir, branch+".txt"), []byte("work of "+branch+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "add", ".")
	git(t, dir, "commit", "--quiet", "-m", "work on "+branch)
	git(t, dir, "push", "--quiet", "origin", branch)
}

// giteaPull reads a pull request through the API, as the forge's UI would.
func giteaPull(t *testing.T, s *giteatest.Server, owner, repo string, n int) (title, body, state string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, fmt.Sprintf("%s/api/v1/repos/%s/%s/pulls/%d", s.URL, owner, repo, n), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "token "+s.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p struct{ Title, Body, State string }
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET pull %d: %s", n, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
		t.Fatal(err)
	}
	return p.Title, p.Body, p.State
}

// giteaOpenPulls counts the open pull requests of the repository.
func giteaOpenPulls(t *testing.T, s *giteatest.Server, owner, repo string) int {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, fmt.Sprintf("%s/api/v1/repos/%s/%s/pulls?state=open&limit=50", s.URL, owner, repo), nil)
	req.Header.Set("Authorization", "token "+s.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ps []json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&ps); err != nil {
		t.Fatal(err)
	}
	return len(ps)
}

// TestGiteaEnsurePR opens a pull request for a pushed branch on a real
// Gitea; asking again updates the same one.
func TestGiteaEnsurePR(t *testing.T) {
	s := giteatest.Start(t)
	clone := s.CreateRepo(t, "web")
	pushBranch(t, clone, "chat-42")
	rem, err := forge.ParseRemote(clone)
	if err != nil {
		t.Fatal(err)
	}
	if rem.Owner != giteatest.Admin || rem.Repo != "web" {
		t.Fatalf("ParseRemote(%q) = %+v", clone, rem)
	}
	fg, err := forge.New(forge.KindGitea, s.URL, s.Token, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	pr := forge.PR{Owner: rem.Owner, Repo: rem.Repo, Head: "chat-42", Base: "main", Title: "Add the work of chat 42", Body: "First version."}

	first, err := fg.EnsurePR(ctx, pr)
	if err != nil {
		t.Fatal(err)
	}
	wantURL := fmt.Sprintf("%s/%s/web/pulls/%d", s.URL, giteatest.Admin, first.Number)
	if !first.Opened || first.Number < 1 || first.State != forge.StateOpen || first.URL != wantURL {
		t.Errorf("first EnsurePR = %+v, want a new open pull request at %s", first, wantURL)
	}

	pr.Title, pr.Body = "Add the work of chat 42 (v2)", "Second version.\n\nWith more words."
	second, err := fg.EnsurePR(ctx, pr)
	if err != nil {
		t.Fatal(err)
	}
	if second.Opened || second.Number != first.Number || second.URL != first.URL || second.State != forge.StateOpen {
		t.Errorf("second EnsurePR = %+v, want #%d updated", second, first.Number)
	}
	if title, body, state := giteaPull(t, s, rem.Owner, rem.Repo, first.Number); title != pr.Title || body != pr.Body || state != "open" {
		t.Errorf("on the forge: %q %q %s", title, body, state)
	}

	// Unchanged, and by number: the same pull request still.
	for _, n := range []int{0, first.Number} {
		pr.Number = n
		again, err := fg.EnsurePR(ctx, pr)
		if err != nil || again.Number != first.Number || again.Opened {
			t.Errorf("EnsurePR (Number %d) = %+v, %v", n, again, err)
		}
	}
	if n := giteaOpenPulls(t, s, rem.Owner, rem.Repo); n != 1 {
		t.Errorf("%d open pull requests, want 1", n)
	}

	t.Run("errors", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			token string
			pr    forge.PR
			want  error
		}{
			{"wrong token", "0123456789abcdef0123456789abcdef01234567", pr, forge.ErrUnauthorized},
			{"no such repository", s.Token, forge.PR{Owner: rem.Owner, Repo: "nope", Head: "chat-42", Base: "main", Title: "t"}, forge.ErrNotFound},
			{"no such pull request", s.Token, forge.PR{Owner: rem.Owner, Repo: "web", Head: "chat-42", Base: "main", Title: "t", Number: 999}, forge.ErrNotFound},
			{"branch not pushed", s.Token, forge.PR{Owner: rem.Owner, Repo: "web", Head: "never-pushed", Base: "main", Title: "t"}, nil},
		} {
			f, err := forge.New(forge.KindGitea, s.URL, tc.token, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.EnsurePR(ctx, tc.pr)
			switch {
			case err == nil:
				t.Errorf("%s: no error", tc.name)
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
			case !errors.Is(err, forge.ErrNotFound) && !errors.Is(err, forge.ErrRejected) && !errors.Is(err, forge.ErrUnauthorized):
				t.Errorf("%s: %v is none of the sentinels", tc.name, err)
			}
			if err != nil && strings.Contains(err.Error(), tc.token) {
				t.Errorf("%s: the error carries the token: %v", tc.name, err)
			}
			t.Logf("%s: %v", tc.name, err)
		}
	})

	// Two EnsurePR at once for a new branch: one pull request.
	t.Run("concurrent", func(t *testing.T) {
		pushBranch(t, clone, "chat-43")
		var wg sync.WaitGroup
		infos := make([]forge.PRInfo, 2)
		errs := make([]error, 2)
		for i := range infos {
			wg.Go(func() {
				infos[i], errs[i] = fg.EnsurePR(ctx, forge.PR{Owner: rem.Owner, Repo: rem.Repo, Head: "chat-43", Base: "main", Title: fmt.Sprintf("chat 43 (%d)", i)})
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		if infos[0].Number != infos[1].Number {
			t.Errorf("two pull requests for one branch: %+v %+v", infos[0], infos[1])
		}
		if n := giteaOpenPulls(t, s, rem.Owner, rem.Repo); n != 2 {
			t.Errorf("%d open pull requests, want 2 (chat-42 and chat-43)", n)
		}
	})

	t.Run("canceled", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := fg.EnsurePR(cctx, pr); !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	})
}
