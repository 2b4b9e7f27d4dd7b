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

// The GitLab fake follows "Merge requests API"
// (https://docs.gitlab.com/api/merge_requests/; its source is
// doc/api/merge_requests.md of gitlab-org/gitlab, read here from the
// gitlabhq/gitlabhq mirror):
//
//   - List project merge requests: GET /projects/:id/merge_requests with
//     state (opened, closed, locked, merged), order_by, sort, source_branch,
//     target_branch, page, per_page, ...; 200 with an array.
//   - Create MR: POST /projects/:id/merge_requests with source_branch,
//     target_branch, title (required) and description, ...; 201. An open one
//     for the same source branch gives 409 {"message": ["Another open merge
//     request already exists for this source branch: !1"]}.
//   - Get single MR: GET /projects/:id/merge_requests/:merge_request_iid.
//   - Update MR: PUT /projects/:id/merge_requests/:merge_request_iid with
//     target_branch, title, description, state_event, ... ("Must include at
//     least one non-required attribute"); 200.
//
// :id is the numeric id or the URL-encoded path ("group%2Fsub%2Frepo",
// doc/api/rest/index.md "Namespaced paths"); the API is under /api/v4, and
// the token goes in the PRIVATE-TOKEN header (doc/api/rest/authentication.md).
// Response bodies: the fields of the docs' merge request examples (id, iid,
// project_id, title, description, state, created_at, updated_at,
// target_branch, source_branch, author, source_project_id,
// target_project_id, labels, draft, merge_status, sha, web_url, references,
// ...) with their example values and this fake's state. Errors: the
// documented {"message": ...} bodies ("401 Unauthorized", "404 Project Not
// Found").
type gitlabFake struct {
	*fakeForge
	project string // the project's path
}

const gitlabProjectID = 3

func newGitLabFake(t *testing.T) (*gitlabFake, *httptest.Server) {
	f := &gitlabFake{fakeForge: &fakeForge{t: t}, project: "my-group/sub/my-project"}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	return f, srv
}

var gitlabMR = regexp.MustCompile(`^/api/v4/projects/([^/]+)/merge_requests(?:/([0-9]+))?$`)

func (f *gitlabFake) serve(w http.ResponseWriter, r *http.Request) {
	f.record(r)
	t := f.t
	if r.Header.Get("PRIVATE-TOKEN") != token {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"message": "401 Unauthorized"})
		return
	}
	if f.failStatus != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(f.failStatus)
		_, _ = w.Write([]byte(f.failBody))
		return
	}
	m := gitlabMR.FindStringSubmatch(r.URL.EscapedPath())
	if m == nil || m[1] != strings.ReplaceAll(f.project, "/", "%2F") {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "404 Project Not Found"})
		return
	}
	if r.Method != http.MethodGet && r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("%s: Content-Type %q", r.Method, r.Header.Get("Content-Type"))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case m[2] == "" && r.Method == http.MethodGet:
		q := r.URL.Query()
		for k := range q {
			if !slices.Contains([]string{"state", "order_by", "sort", "source_branch", "target_branch", "page", "per_page"}, k) {
				t.Errorf("list: unexpected query parameter %q", k)
			}
		}
		if s := q.Get("state"); s != "" && !slices.Contains([]string{"opened", "closed", "locked", "merged", "all"}, s) {
			t.Errorf("list: state %q is not a documented state", s)
		}
		list := []map[string]any{}
		for _, p := range f.prs {
			if (q.Get("source_branch") == "" || p.Head == q.Get("source_branch")) && (q.Get("state") == "" || q.Get("state") == "all" || q.Get("state") == gitlabState(p)) && !p.HiddenFromListing {
				list = append(list, f.json(p))
			}
		}
		if q.Get("sort") != "asc" {
			slices.Reverse(list)
		}
		for _, p := range f.prs {
			p.HiddenFromListing = false
		}
		writeJSON(w, http.StatusOK, list)
	case m[2] == "" && r.Method == http.MethodPost:
		b := decodeBody(t, r, []string{"source_branch", "target_branch", "title"}, "description")
		if o := f.openFor(str(b, "source_branch")); o != nil {
			writeJSON(w, http.StatusConflict, map[string]any{"message": []string{fmt.Sprintf("Another open merge request already exists for this source branch: !%d", o.Number)}})
			return
		}
		f.next++
		p := &fakePR{Number: f.next, Head: str(b, "source_branch"), Base: str(b, "target_branch"), Title: str(b, "title"), Body: str(b, "description"), State: "open"}
		f.prs = append(f.prs, p)
		writeJSON(w, http.StatusCreated, f.json(p))
	case m[2] != "" && (r.Method == http.MethodGet || r.Method == http.MethodPut):
		n, _ := strconv.Atoi(m[2])
		p := f.find(n)
		if p == nil {
			writeJSON(w, http.StatusNotFound, map[string]any{"message": "404 Not found"})
			return
		}
		if r.Method == http.MethodPut {
			b := decodeBody(t, r, nil, "target_branch", "title", "description")
			for k, v := range b {
				s, _ := v.(string)
				switch k {
				case "title":
					p.Title = s
				case "description":
					p.Body = s
				case "target_branch":
					p.Base = s
				}
			}
		}
		writeJSON(w, http.StatusOK, f.json(p))
	default:
		t.Errorf("unexpected request %s %s", r.Method, r.URL)
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "404 Not found"})
	}
}

func gitlabState(p *fakePR) string {
	if p.State == "open" {
		return "opened"
	}
	return p.State
}

// json is the docs' example merge request with p's values.
func (f *gitlabFake) json(p *fakePR) map[string]any {
	user := map[string]any{"id": 1, "name": "Administrator", "username": "admin", "state": "active", "avatar_url": nil, "web_url": "https://gitlab.example.com/admin"}
	var mergedAt any
	if p.State == "merged" {
		mergedAt = "2018-09-07T11:16:17.520Z"
	}
	return map[string]any{
		"id": 100 + p.Number, "iid": p.Number, "project_id": gitlabProjectID,
		"title": p.Title, "description": p.Body, "state": gitlabState(p),
		"created_at": "2017-04-29T08:46:00Z", "updated_at": "2017-04-29T08:46:00Z",
		"merged_by": nil, "merged_at": mergedAt, "closed_by": nil, "closed_at": nil,
		"target_branch": p.Base, "source_branch": p.Head,
		"upvotes": 0, "downvotes": 0, "author": user, "assignee": nil, "assignees": []any{}, "reviewers": []any{},
		"source_project_id": gitlabProjectID, "target_project_id": gitlabProjectID,
		"labels": []string{}, "draft": false, "work_in_progress": false, "milestone": nil,
		"merge_when_pipeline_succeeds": false, "merge_status": "can_be_merged", "detailed_merge_status": "mergeable",
		"sha": "8888888888888888888888888888888888888888", "merge_commit_sha": nil, "squash_commit_sha": nil,
		"user_notes_count": 0, "discussion_locked": nil, "should_remove_source_branch": true, "force_remove_source_branch": false,
		"allow_collaboration": false, "allow_maintainer_to_push": false,
		"web_url":    fmt.Sprintf("https://gitlab.example.com/%s/-/merge_requests/%d", f.project, p.Number),
		"references": map[string]any{"short": fmt.Sprintf("!%d", p.Number), "relative": fmt.Sprintf("!%d", p.Number), "full": fmt.Sprintf("%s!%d", f.project, p.Number)},
		"time_stats": map[string]any{"time_estimate": 0, "total_time_spent": 0, "human_time_estimate": nil, "human_total_time_spent": nil},
		"squash":     false, "task_completion_status": map[string]any{"count": 0, "completed_count": 0},
	}
}

func newGitLab(t *testing.T) (*gitlabFake, forge.Forge) {
	t.Helper()
	f, srv := newGitLabFake(t)
	fg, err := forge.New(forge.KindGitLab, srv.URL, token, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	return f, fg
}

func TestGitLabEnsurePR(t *testing.T) {
	f, fg := newGitLab(t)
	ctx := t.Context()
	const mrs = "/api/v4/projects/my-group%2Fsub%2Fmy-project/merge_requests"
	list := "GET " + mrs + "?order_by=created_at&per_page=100&sort=asc&source_branch=feat&state=opened"
	rem, err := forge.ParseRemote("git@gitlab.example.com:my-group/sub/my-project.git")
	if err != nil {
		t.Fatal(err)
	}
	pr := forge.PR{Owner: rem.Owner, Repo: rem.Repo, Head: "feat", Base: "main", Title: "test1", Body: "fixed login page css paddings"}

	info, err := fg.EnsurePR(ctx, pr)
	if err != nil {
		t.Fatal(err)
	}
	want := forge.PRInfo{Number: 1, URL: "https://gitlab.example.com/my-group/sub/my-project/-/merge_requests/1", State: forge.StateOpen, Opened: true}
	if info != want {
		t.Errorf("first EnsurePR = %+v, want %+v", info, want)
	}
	checkRequests(t, f.requests(), list, "POST "+mrs)

	pr.Title = "test2"
	if info, err = fg.EnsurePR(ctx, pr); err != nil {
		t.Fatal(err)
	}
	want.Opened = false
	if info != want {
		t.Errorf("second EnsurePR = %+v, want %+v", info, want)
	}
	checkRequests(t, f.requests(), list, "PUT "+mrs+"/1")
	if p := f.find(1); p.Title != "test2" || p.Body != "fixed login page css paddings" {
		t.Errorf("after the update the merge request is %+v", p)
	}

	if info, err = fg.EnsurePR(ctx, pr); err != nil || info != want {
		t.Errorf("third EnsurePR = %+v, %v", info, err)
	}
	checkRequests(t, f.requests(), list)

	pr.Number, pr.Body = 1, ""
	if info, err = fg.EnsurePR(ctx, pr); err != nil || info != want {
		t.Errorf("EnsurePR by iid = %+v, %v", info, err)
	}
	checkRequests(t, f.requests(), "GET "+mrs+"/1", "PUT "+mrs+"/1")
	if f.find(1).Body != "" {
		t.Error("the description was not emptied")
	}
	if len(f.prs) != 1 {
		t.Errorf("%d merge requests, want 1", len(f.prs))
	}
}

// TestGitLabEnsurePRRace: the 409 of a merge request opened meanwhile leads
// to it.
func TestGitLabEnsurePRRace(t *testing.T) {
	f, fg := newGitLab(t)
	f.add(fakePR{Number: 4, Head: "feat", Base: "main", Title: "theirs", HiddenFromListing: true})
	info, err := fg.EnsurePR(t.Context(), forge.PR{Owner: "my-group/sub", Repo: "my-project", Head: "feat", Base: "main", Title: "ours"})
	if err != nil {
		t.Fatal(err)
	}
	if info.Number != 4 || info.Opened || len(f.prs) != 1 || f.prs[0].Title != "ours" {
		t.Errorf("EnsurePR = %+v; merge requests %+v", info, f.prs)
	}
}

func TestGitLabErrors(t *testing.T) {
	pr := forge.PR{Owner: "my-group/sub", Repo: "my-project", Head: "feat", Base: "main", Title: "t"}
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   error
	}{
		{"unauthorized", 401, `{"message":"401 Unauthorized: ` + token + `"}`, forge.ErrUnauthorized},
		{"forbidden", 403, `{"message":"403 Forbidden"}`, forge.ErrForbidden},
		{"not found", 404, `{"message":"404 Project Not Found"}`, forge.ErrNotFound},
		{"bad request", 400, `{"message":{"target_branch":["is invalid"]}}`, forge.ErrRejected},
		{"conflict", 409, `{"message":["Another open merge request already exists for this source branch: !1"]}`, forge.ErrRejected},
		{"unavailable", 503, `{"message":"503 Service Unavailable"}`, forge.ErrUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, fg := newGitLab(t)
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
	t.Run("canceled", func(t *testing.T) {
		_, fg := newGitLab(t)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := fg.EnsurePR(ctx, pr); !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	})
}
