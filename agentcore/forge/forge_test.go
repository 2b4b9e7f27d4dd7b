package forge_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/forge"
)

func TestNewRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, kind, base, token string
	}{
		{"unknown kind", "bitbucket", "https://example.com", token},
		{"no token", forge.KindGitHub, "", " "},
		{"gitea without a base URL", forge.KindGitea, "", token},
		{"not http", forge.KindGitLab, "ftp://gitlab.example.com", token},
		{"credentials in the base URL", forge.KindGitea, "https://alice:" + token + "@gitea.example.com", token},
	} {
		f, err := forge.New(tc.kind, tc.base, tc.token, nil)
		if !errors.Is(err, forge.ErrInvalid) || f != nil {
			t.Errorf("%s: %v, %v; want ErrInvalid", tc.name, f, err)
			continue
		}
		if strings.Contains(err.Error(), token) {
			t.Errorf("%s: the error carries the token: %v", tc.name, err)
		}
	}
	for _, kind := range []string{forge.KindGitHub, forge.KindGitLab} {
		if _, err := forge.New(kind, "", token, nil); err != nil {
			t.Errorf("%s with the public instance: %v", kind, err)
		}
	}
}

// TestNewKeepsHTTPClient: the caller's client is not changed (the token is
// added to each request, not to the client's transport).
func TestNewKeepsHTTPClient(t *testing.T) {
	hc := &http.Client{Timeout: 7 * time.Second}
	for _, kind := range []string{forge.KindGitea, forge.KindGitHub, forge.KindGitLab} {
		if _, err := forge.New(kind, "https://forge.example.com", token, hc); err != nil {
			t.Fatal(err)
		}
	}
	if hc.Transport != nil || hc.Jar != nil || hc.Timeout != 7*time.Second {
		t.Errorf("the client was changed: %+v", hc)
	}
}

func TestEnsurePRChecksTheRequest(t *testing.T) {
	_, fg := newGitHub(t)
	for _, pr := range []forge.PR{
		{Repo: "r", Head: "h", Base: "b", Title: "t"},
		{Owner: "o", Head: "h", Base: "b", Title: "t"},
		{Owner: "o", Repo: "r", Base: "b", Title: "t"},
		{Owner: "o", Repo: "r", Head: "h", Title: "t"},
		{Owner: "o", Repo: "r", Head: "h", Base: "b", Title: "  "},
		{Owner: "o", Repo: "r", Head: "main", Base: "main", Title: "t"},
		{Owner: "o", Repo: "r", Head: "h", Base: "b", Title: "t", Number: -1},
	} {
		if _, err := fg.EnsurePR(t.Context(), pr); !errors.Is(err, forge.ErrInvalid) {
			t.Errorf("EnsurePR(%+v) = %v, want ErrInvalid", pr, err)
		}
	}
}

// TestEnsurePRSerializesABranch: concurrent calls for one branch through one
// Forge open one pull request, even on a forge that would open two (as Gitea
// does when two creations race).
func TestEnsurePRSerializesABranch(t *testing.T) {
	f, fg := newGitHub(t)
	f.duplicates = true
	var wg sync.WaitGroup
	infos := make([]forge.PRInfo, 8)
	errs := make([]error, len(infos))
	for i := range infos {
		wg.Go(func() {
			infos[i], errs[i] = fg.EnsurePR(t.Context(), forge.PR{Owner: "octocat", Repo: "Hello-World", Head: "feat", Base: "master", Title: "t"})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	opened := 0
	for _, in := range infos {
		if in.Opened {
			opened++
		}
		if in.Number != infos[0].Number {
			t.Errorf("numbers %d and %d", in.Number, infos[0].Number)
		}
	}
	if opened != 1 || len(f.prs) != 1 {
		t.Errorf("%d calls opened one, %d pull requests; want 1 and 1", opened, len(f.prs))
	}

	// A call waiting for the branch gives up with its context.
	gate := make(chan struct{})
	slow := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		select {
		case <-gate:
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
		return http.DefaultTransport.RoundTrip(r)
	})}
	_, srv := newGitHubFake(t)
	fs, err := forge.New(forge.KindGitHub, srv.URL, token, slow)
	if err != nil {
		t.Fatal(err)
	}
	pr := forge.PR{Owner: "octocat", Repo: "Hello-World", Head: "feat", Base: "master", Title: "t"}
	first := make(chan error, 1)
	go func() { _, err := fs.EnsurePR(t.Context(), pr); first <- err }()
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	// The second call either waits for the first and times out, or (if it
	// got the branch first) is held in the transport and times out there.
	if _, err := fs.EnsurePR(ctx, pr); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the waiting call: %v, want context.DeadlineExceeded", err)
	}
	close(gate)
	if err := <-first; err != nil {
		t.Errorf("the first call: %v", err)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestUnreachable: a forge that does not answer is ErrUnavailable.
func TestUnreachable(t *testing.T) {
	pr := forge.PR{Owner: "o", Repo: "r", Head: "h", Base: "b", Title: "t"}
	for _, kind := range []string{forge.KindGitea, forge.KindGitHub, forge.KindGitLab} {
		f, err := forge.New(kind, "http://127.0.0.1:1", token, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.EnsurePR(t.Context(), pr)
		if !errors.Is(err, forge.ErrUnavailable) {
			t.Errorf("%s: %v, want ErrUnavailable", kind, err)
		}
		t.Logf("%s: %v", kind, err)
	}
}
