package forge

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// githubForge drives GitHub's REST API ("REST API endpoints for pull
// requests", API version 2022-11-28).
type githubForge struct {
	api   rest
	locks branchLocks
}

// newGitHub returns the GitHub forge: github.com for "", https://github.com
// or https://api.github.com, else GitHub Enterprise Server at baseURL (whose
// API is under /api/v3/).
func newGitHub(baseURL, token string, hc *http.Client, s scrubber) (Forge, error) {
	base := "https://api.github.com"
	if baseURL != "" {
		u, _ := url.Parse(baseURL) // checked by New
		if h := strings.ToLower(u.Hostname()); h != "github.com" && h != "api.github.com" {
			base = apiBase(baseURL, "/api/v3")
		}
	}
	h := http.Header{}
	h.Set("Authorization", "Bearer "+token)
	h.Set("Accept", "application/vnd.github+json")
	h.Set("X-GitHub-Api-Version", "2022-11-28")
	return &githubForge{api: rest{base: base, headers: h, hc: hc, s: s, message: jsonMessage}}, nil
}

// EnsurePR implements Forge.
func (g *githubForge) EnsurePR(ctx context.Context, pr PR) (PRInfo, error) {
	return ensure(ctx, &g.locks, g, pr)
}

// githubPull is the part of GitHub's pull request the driver reads.
type githubPull struct {
	Number   int     `json:"number"`
	HTMLURL  string  `json:"html_url"`
	State    string  `json:"state"` // open, closed
	Merged   bool    `json:"merged"`
	MergedAt *string `json:"merged_at"`
	Title    string  `json:"title"`
	Body     *string `json:"body"`
	Head     struct {
		Ref string `json:"ref"`
	} `json:"head"`
	Base struct {
		Ref string `json:"ref"`
	} `json:"base"`
}

func (p *githubPull) current() current {
	c := current{Number: p.Number, URL: p.HTMLURL, State: StateOpen, Title: p.Title, Base: p.Base.Ref}
	if p.Body != nil {
		c.Body = *p.Body
	}
	switch {
	case p.Merged || p.MergedAt != nil:
		c.State = StateMerged
	case p.State == "closed":
		c.State = StateClosed
	}
	return c
}

func (g *githubForge) get(ctx context.Context, pr PR, number int) (current, error) {
	var p githubPull
	if _, err := g.api.call(ctx, "read pull request", pr, http.MethodGet, pr.pulls()+numberPath(number), nil, nil, &p); err != nil {
		return current{}, err
	}
	return p.current(), nil
}

func (g *githubForge) findOpen(ctx context.Context, pr PR) (*current, error) {
	// head=owner:branch names a branch of the repository itself; the list is
	// newest first, so the last match is the one opened first.
	var found *current
	for page := 1; ; {
		q := url.Values{"state": {"open"}, "head": {pr.Owner + ":" + pr.Head}, "per_page": {"100"}}
		if page > 1 {
			q.Set("page", strconv.Itoa(page))
		}
		var ps []githubPull
		h, err := g.api.call(ctx, "list pull requests", pr, http.MethodGet, pr.pulls(), q, nil, &ps)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			if p.Head.Ref == pr.Head && p.State == "open" {
				cur := p.current()
				found = &cur
			}
		}
		next := nextPage(h)
		if next <= page {
			return found, nil
		}
		page = next
	}
}

func (g *githubForge) create(ctx context.Context, pr PR) (current, error) {
	in := struct {
		Title string `json:"title"`
		Head  string `json:"head"`
		Base  string `json:"base"`
		Body  string `json:"body"`
	}{pr.Title, pr.Head, pr.Base, pr.Body}
	var p githubPull
	if _, err := g.api.call(ctx, "open pull request", pr, http.MethodPost, pr.pulls(), nil, in, &p); err != nil {
		return current{}, err
	}
	return p.current(), nil
}

func (g *githubForge) update(ctx context.Context, pr PR, number int, ch change) (current, error) {
	in := struct {
		Title *string `json:"title,omitempty"`
		Body  *string `json:"body,omitempty"`
		Base  *string `json:"base,omitempty"`
	}{ch.Title, ch.Body, ch.Base}
	var p githubPull
	if _, err := g.api.call(ctx, "update pull request", pr, http.MethodPatch, pr.pulls()+numberPath(number), nil, in, &p); err != nil {
		return current{}, err
	}
	return p.current(), nil
}
