package forge

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// gitlabForge drives GitLab's REST API (/api/v4, "Merge requests API"); a
// pull request there is a merge request, numbered by its iid.
type gitlabForge struct {
	api   rest
	locks branchLocks
}

// newGitLab returns the GitLab forge at baseURL ("": gitlab.com), adding
// /api/v4 when it is missing.
func newGitLab(baseURL, token string, hc *http.Client, s scrubber) (Forge, error) {
	if baseURL == "" {
		baseURL = "https://gitlab.com"
	}
	h := http.Header{}
	h.Set("PRIVATE-TOKEN", token)
	h.Set("Accept", "application/json")
	return &gitlabForge{api: rest{base: apiBase(baseURL, "/api/v4"), headers: h, hc: hc, s: s, message: jsonMessage}}, nil
}

// EnsurePR implements Forge.
func (g *gitlabForge) EnsurePR(ctx context.Context, pr PR) (PRInfo, error) {
	return ensure(ctx, &g.locks, g, pr)
}

// mrs is the path of the merge requests of pr's project, named by its
// URL-encoded path ("group%2Fsub%2Frepo").
func (pr PR) mrs() string {
	return "/projects/" + url.PathEscape(pr.Owner+"/"+pr.Repo) + "/merge_requests"
}

// gitlabMR is the part of GitLab's merge request the driver reads.
type gitlabMR struct {
	IID             int    `json:"iid"`
	WebURL          string `json:"web_url"`
	State           string `json:"state"` // opened, closed, locked, merged
	Title           string `json:"title"`
	Description     string `json:"description"`
	SourceBranch    string `json:"source_branch"`
	TargetBranch    string `json:"target_branch"`
	SourceProjectID int64  `json:"source_project_id"`
	TargetProjectID int64  `json:"target_project_id"`
}

func (m *gitlabMR) current() current {
	c := current{Number: m.IID, URL: m.WebURL, State: StateOpen, Title: m.Title, Body: m.Description, Base: m.TargetBranch}
	switch m.State {
	case "merged":
		c.State = StateMerged
	case "closed":
		c.State = StateClosed
	}
	return c
}

func (g *gitlabForge) get(ctx context.Context, pr PR, number int) (current, error) {
	var m gitlabMR
	if _, err := g.api.call(ctx, "read merge request", pr, http.MethodGet, pr.mrs()+numberPath(number), nil, nil, &m); err != nil {
		return current{}, err
	}
	return m.current(), nil
}

func (g *gitlabForge) findOpen(ctx context.Context, pr PR) (*current, error) {
	for page := 1; ; {
		q := url.Values{"state": {"opened"}, "source_branch": {pr.Head}, "order_by": {"created_at"}, "sort": {"asc"}, "per_page": {"100"}}
		if page > 1 {
			q.Set("page", strconv.Itoa(page))
		}
		var ms []gitlabMR
		h, err := g.api.call(ctx, "list merge requests", pr, http.MethodGet, pr.mrs(), q, nil, &ms)
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			// A merge request from a fork's branch of the same name is not ours.
			if m.SourceBranch == pr.Head && m.SourceProjectID == m.TargetProjectID && m.State == "opened" {
				cur := m.current()
				return &cur, nil
			}
		}
		next := nextPage(h)
		if next <= page {
			return nil, nil
		}
		page = next
	}
}

func (g *gitlabForge) create(ctx context.Context, pr PR) (current, error) {
	in := struct {
		Title        string `json:"title"`
		Description  string `json:"description"`
		SourceBranch string `json:"source_branch"`
		TargetBranch string `json:"target_branch"`
	}{pr.Title, pr.Body, pr.Head, pr.Base}
	var m gitlabMR
	if _, err := g.api.call(ctx, "open merge request", pr, http.MethodPost, pr.mrs(), nil, in, &m); err != nil {
		return current{}, err
	}
	return m.current(), nil
}

func (g *gitlabForge) update(ctx context.Context, pr PR, number int, ch change) (current, error) {
	in := struct {
		Title        *string `json:"title,omitempty"`
		Description  *string `json:"description,omitempty"`
		TargetBranch *string `json:"target_branch,omitempty"`
	}{ch.Title, ch.Body, ch.Base}
	var m gitlabMR
	if _, err := g.api.call(ctx, "update merge request", pr, http.MethodPut, pr.mrs()+numberPath(number), nil, in, &m); err != nil {
		return current{}, err
	}
	return m.current(), nil
}
