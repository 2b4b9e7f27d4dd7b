package forge_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/forge"
)

// The GitHub fake follows "REST API endpoints for pull requests"
// (https://docs.github.com/en/rest/pulls/pulls?apiVersion=2022-11-28):
//
//   - List pull requests: GET /repos/{owner}/{repo}/pulls with the query
//     parameters state (open, closed, all), head ("user:ref-name" or
//     "organization:ref-name"), base, sort, direction, per_page, page; 200
//     with an array of pull requests.
//   - Create a pull request: POST /repos/{owner}/{repo}/pulls with the body
//     parameters title, head, base, body (and head_repo, maintainer_can_modify,
//     draft, issue); 201 with the pull request; 422 "Validation Failed".
//   - Get a pull request: GET /repos/{owner}/{repo}/pulls/{pull_number}.
//   - Update a pull request: PATCH /repos/{owner}/{repo}/pulls/{pull_number}
//     with title, body, state, base, maintainer_can_modify; 200.
//
// Under GitHub Enterprise Server the same paths sit below /api/v3
// (https://docs.github.com/en/enterprise-server@latest/rest/quickstart).
// The headers are those the docs ask for: Accept
// application/vnd.github+json (the older application/vnd.github.v3+json is
// accepted too), X-GitHub-Api-Version 2022-11-28 and
// Authorization: Bearer <token>.
//
// Response bodies: the fields of the docs' example "pull-request"
// (components/examples/pull-request of github/rest-api-description, shown on
// the page above), trimmed to the ones a client could read, with its example
// values (octocat/Hello-World, number 1347 style ids) and this fake's state.
// Errors: the documented client-error shape {"message", "errors",
// "documentation_url", "status"} (https://docs.github.com/en/rest/using-the-rest-api/troubleshooting-the-rest-api).
type githubFake struct {
	*fakeForge
	owner, repo string
}

func newGitHubFake(t *testing.T) (*githubFake, *httptest.Server) {
	f := &githubFake{fakeForge: &fakeForge{t: t, next: 1346}, owner: "octocat", repo: "Hello-World"}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	return f, srv
}

var githubPull = regexp.MustCompile(`^/api/v3/repos/([^/]+)/([^/]+)/pulls(?:/([0-9]+))?$`)

func (f *githubFake) serve(w http.ResponseWriter, r *http.Request) {
	f.record(r)
	t := f.t
	if got := r.Header.Get("Authorization"); got != "Bearer "+token {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest", "status": "401"})
		return
	}
	if got := r.Header.Get("X-GitHub-Api-Version"); got != "2022-11-28" {
		t.Errorf("X-GitHub-Api-Version %q", got)
	}
	if got := r.Header.Get("Accept"); got != "application/vnd.github.v3+json" && got != "application/vnd.github+json" {
		t.Errorf("Accept %q", got)
	}
	if f.failStatus != 0 {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(f.failStatus)
		_, _ = w.Write([]byte(f.failBody))
		return
	}
	m := githubPull.FindStringSubmatch(r.URL.EscapedPath())
	if m == nil || m[1] != f.owner || m[2] != f.repo {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Not Found", "documentation_url": "https://docs.github.com/rest", "status": "404"})
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case m[3] == "" && r.Method == http.MethodGet:
		q := r.URL.Query()
		for k := range q {
			if !slices.Contains([]string{"state", "head", "base", "sort", "direction", "per_page", "page"}, k) {
				t.Errorf("list: undocumented query parameter %q", k)
			}
		}
		head := q.Get("head")
		owner, branch, ok := strings.Cut(head, ":")
		if head != "" && (!ok || owner != f.owner) {
			t.Errorf("list: head %q is not user:ref-name of the owner", head)
		}
		state := q.Get("state")
		if state == "" {
			state = "open"
		}
		list := []map[string]any{}
		for _, p := range f.prs {
			if (head == "" || p.Head == branch) && (state == "all" || state == githubState(p)) && !p.HiddenFromListing {
				list = append([]map[string]any{f.json(p, false)}, list...) // newest first
			}
		}
		for _, p := range f.prs {
			p.HiddenFromListing = false
		}
		writeJSON(w, http.StatusOK, list)
	case m[3] == "" && r.Method == http.MethodPost:
		b := decodeBody(t, r, []string{"title", "head", "base", "body"})
		if f.openFor(str(b, "head")) != nil && !f.duplicates {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]any{
				"message": "Validation Failed",
				"errors": []map[string]any{{"resource": "PullRequest", "code": "custom",
					"message": "A pull request already exists for " + f.owner + ":" + str(b, "head") + "."}},
				"documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request", "status": "422"})
			return
		}
		f.next++
		p := &fakePR{Number: f.next, Head: str(b, "head"), Base: str(b, "base"), Title: str(b, "title"), Body: str(b, "body"), State: "open"}
		f.prs = append(f.prs, p)
		writeJSON(w, http.StatusCreated, f.json(p, true))
	case m[3] != "" && (r.Method == http.MethodGet || r.Method == http.MethodPatch):
		n, _ := strconv.Atoi(m[3])
		p := f.find(n)
		if p == nil {
			writeJSON(w, http.StatusNotFound, map[string]any{"message": "Not Found", "documentation_url": "https://docs.github.com/rest/pulls/pulls#get-a-pull-request", "status": "404"})
			return
		}
		if r.Method == http.MethodPatch {
			b := decodeBody(t, r, nil, "title", "body", "base")
			for k, v := range b {
				s, _ := v.(string)
				switch k {
				case "title":
					p.Title = s
				case "body":
					p.Body = s
				case "base":
					p.Base = s
				default:
					t.Errorf("update: unexpected body parameter %q", k)
				}
			}
		}
		writeJSON(w, http.StatusOK, f.json(p, true))
	default:
		t.Errorf("unexpected request %s %s", r.Method, r.URL)
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Not Found", "status": "404"})
	}
}

func githubState(p *fakePR) string {
	if p.State == "merged" {
		return "closed"
	}
	return p.State
}

// json is the docs' example pull request with p's values; full adds the
// fields only the single-pull-request endpoints return ("merged", ...).
func (f *githubFake) json(p *fakePR, full bool) map[string]any {
	api := "https://api.github.com/repos/" + f.owner + "/" + f.repo
	web := "https://github.com/" + f.owner + "/" + f.repo
	user := map[string]any{"login": f.owner, "id": 1, "node_id": "MDQ6VXNlcjE=", "type": "User", "site_admin": false,
		"html_url": "https://github.com/" + f.owner, "url": "https://api.github.com/users/" + f.owner}
	repo := map[string]any{"id": 1296269, "node_id": "MDEwOlJlcG9zaXRvcnkxMjk2MjY5", "name": f.repo, "full_name": f.owner + "/" + f.repo,
		"owner": user, "private": false, "html_url": web, "url": api, "default_branch": "master"}
	var mergedAt any
	if p.State == "merged" {
		mergedAt = "2011-01-26T19:01:12Z"
	}
	out := map[string]any{
		"url":                fmt.Sprintf("%s/pulls/%d", api, p.Number),
		"id":                 p.Number,
		"node_id":            "MDExOlB1bGxSZXF1ZXN0MQ==",
		"html_url":           fmt.Sprintf("%s/pull/%d", web, p.Number),
		"diff_url":           fmt.Sprintf("%s/pull/%d.diff", web, p.Number),
		"patch_url":          fmt.Sprintf("%s/pull/%d.patch", web, p.Number),
		"issue_url":          fmt.Sprintf("%s/issues/%d", api, p.Number),
		"number":             p.Number,
		"state":              githubState(p),
		"locked":             false,
		"title":              p.Title,
		"user":               user,
		"body":               p.Body,
		"created_at":         "2011-01-26T19:01:12Z",
		"updated_at":         "2011-01-26T19:01:12Z",
		"closed_at":          nil,
		"merged_at":          mergedAt,
		"head":               map[string]any{"label": f.owner + ":" + p.Head, "ref": p.Head, "sha": "6dcb09b5b57875f334f61aebed695e2e4193db5e", "user": user, "repo": repo},
		"base":               map[string]any{"label": f.owner + ":" + p.Base, "ref": p.Base, "sha": "6dcb09b5b57875f334f61aebed695e2e4193db5e", "user": user, "repo": repo},
		"draft":              false,
		"author_association": "OWNER",
	}
	if full {
		out["merged"] = p.State == "merged"
		out["mergeable"] = true
		out["comments"] = 0
		out["commits"] = 1
		out["additions"] = 1
		out["deletions"] = 0
		out["changed_files"] = 1
	}
	return out
}

func newGitHub(t *testing.T) (*githubFake, forge.Forge) {
	t.Helper()
	f, srv := newGitHubFake(t)
	fg, err := forge.New(forge.KindGitHub, srv.URL, token, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	return f, fg
}

func TestGitHubEnsurePR(t *testing.T) {
	f, fg := newGitHub(t)
	ctx := t.Context()
	list := "GET /api/v3/repos/octocat/Hello-World/pulls?head=octocat%3Afeat&per_page=100&state=open"
	pr := forge.PR{Owner: "octocat", Repo: "Hello-World", Head: "feat", Base: "master", Title: "Amazing new feature", Body: "Please pull these awesome changes in!"}

	info, err := fg.EnsurePR(ctx, pr)
	if err != nil {
		t.Fatal(err)
	}
	want := forge.PRInfo{Number: 1347, URL: "https://github.com/octocat/Hello-World/pull/1347", State: forge.StateOpen, Opened: true}
	if info != want {
		t.Errorf("first EnsurePR = %+v, want %+v", info, want)
	}
	checkRequests(t, f.requests(), list, "POST /api/v3/repos/octocat/Hello-World/pulls")

	pr.Title, pr.Body = "new title", "updated body"
	info, err = fg.EnsurePR(ctx, pr)
	if err != nil {
		t.Fatal(err)
	}
	want.Opened = false
	if info != want {
		t.Errorf("second EnsurePR = %+v, want %+v", info, want)
	}
	checkRequests(t, f.requests(), list, "PATCH /api/v3/repos/octocat/Hello-World/pulls/1347")
	if p := f.find(1347); p.Title != "new title" || p.Body != "updated body" || p.Base != "master" {
		t.Errorf("after the update the pull request is %+v", p)
	}

	// Nothing to change: the listing only.
	if info, err = fg.EnsurePR(ctx, pr); err != nil || info != want {
		t.Errorf("third EnsurePR = %+v, %v", info, err)
	}
	checkRequests(t, f.requests(), list)

	// By number: read, then write the base that differs.
	pr.Number, pr.Base = 1347, "develop"
	if info, err = fg.EnsurePR(ctx, pr); err != nil || info != want {
		t.Errorf("EnsurePR by number = %+v, %v", info, err)
	}
	checkRequests(t, f.requests(), "GET /api/v3/repos/octocat/Hello-World/pulls/1347", "PATCH /api/v3/repos/octocat/Hello-World/pulls/1347")
	if f.find(1347).Base != "develop" {
		t.Error("the base was not changed")
	}
	if len(f.prs) != 1 {
		t.Errorf("%d pull requests, want 1", len(f.prs))
	}
}

// TestGitHubEnsurePRRace: the pull request appears between the listing and
// the creation (another EnsurePR won): the 422 leads to the winner's, which
// is updated; no second one is opened.
func TestGitHubEnsurePRRace(t *testing.T) {
	f, fg := newGitHub(t)
	f.add(fakePR{Number: 7, Head: "feat", Base: "master", Title: "theirs", HiddenFromListing: true})
	info, err := fg.EnsurePR(t.Context(), forge.PR{Owner: "octocat", Repo: "Hello-World", Head: "feat", Base: "master", Title: "ours"})
	if err != nil {
		t.Fatal(err)
	}
	if info.Number != 7 || info.Opened {
		t.Errorf("EnsurePR = %+v, want #7 updated", info)
	}
	list := "GET /api/v3/repos/octocat/Hello-World/pulls?head=octocat%3Afeat&per_page=100&state=open"
	checkRequests(t, f.requests(), list, "POST /api/v3/repos/octocat/Hello-World/pulls", list, "PATCH /api/v3/repos/octocat/Hello-World/pulls/7")
	if len(f.prs) != 1 || f.prs[0].Title != "ours" {
		t.Errorf("pull requests %+v", f.prs)
	}
}

// TestGitHubOtherBranches: open pull requests of other heads and closed ones
// of the same head are not updated.
func TestGitHubOtherBranches(t *testing.T) {
	f, fg := newGitHub(t)
	f.add(fakePR{Head: "other", Base: "master", Title: "other"})
	f.add(fakePR{Head: "feat", Base: "master", Title: "old", State: "closed"})
	info, err := fg.EnsurePR(t.Context(), forge.PR{Owner: "octocat", Repo: "Hello-World", Head: "feat", Base: "master", Title: "new"})
	if err != nil || !info.Opened || info.Number != 1349 {
		t.Fatalf("EnsurePR = %+v, %v; want a new pull request", info, err)
	}
	// A merged pull request read by number reports it.
	f.find(1348).State = "merged"
	info, err = fg.EnsurePR(t.Context(), forge.PR{Owner: "octocat", Repo: "Hello-World", Head: "feat", Base: "master", Title: "old", Number: 1348})
	if err != nil || info.State != forge.StateMerged {
		t.Errorf("EnsurePR of a merged one = %+v, %v", info, err)
	}
}

func TestGitHubErrors(t *testing.T) {
	pr := forge.PR{Owner: "octocat", Repo: "Hello-World", Head: "feat", Base: "master", Title: "t"}
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   error
	}{
		{"bad credentials", 401, `{"message":"Bad credentials for ` + token + `","documentation_url":"https://docs.github.com/rest","status":"401"}`, forge.ErrUnauthorized},
		{"forbidden", 403, `{"message":"Resource not accessible by personal access token","documentation_url":"https://docs.github.com/rest/pulls/pulls#create-a-pull-request","status":"403"}`, forge.ErrForbidden},
		{"not found", 404, `{"message":"Not Found","documentation_url":"https://docs.github.com/rest/pulls/pulls#list-pull-requests","status":"404"}`, forge.ErrNotFound},
		{"validation", 422, `{"message":"Validation Failed","errors":[{"resource":"PullRequest","field":"base","code":"invalid"}],"documentation_url":"https://docs.github.com/rest/pulls/pulls#create-a-pull-request","status":"422"}`, forge.ErrRejected},
		{"server error", 502, `{"message":"Server Error"}`, forge.ErrUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, fg := newGitHub(t)
			f.failStatus, f.failBody = tc.status, tc.body
			_, err := fg.EnsurePR(t.Context(), pr)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if strings.Contains(err.Error(), token) {
				t.Errorf("the error carries the token: %v", err)
			}
		})
	}
	t.Run("wrong token", func(t *testing.T) {
		_, srv := newGitHubFake(t)
		fg, err := forge.New(forge.KindGitHub, srv.URL, "not-the-token", srv.Client())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fg.EnsurePR(t.Context(), pr); !errors.Is(err, forge.ErrUnauthorized) || !strings.Contains(err.Error(), "Bad credentials") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("canceled", func(t *testing.T) {
		_, fg := newGitHub(t)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := fg.EnsurePR(ctx, pr); !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	})
}
