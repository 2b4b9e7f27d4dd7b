package forge

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// giteaForge drives Gitea's API (/api/v1; Forgejo's is the same): the
// endpoints of https://gitea.com/api/swagger under "repository".
type giteaForge struct {
	api   rest
	locks branchLocks
}

func newGitea(baseURL, token string, hc *http.Client, s scrubber) (Forge, error) {
	if baseURL == "" {
		return nil, errorf(ErrInvalid, "a Gitea forge %s", errNoBase)
	}
	h := http.Header{}
	h.Set("Authorization", "token "+token)
	h.Set("Accept", "application/json")
	return &giteaForge{api: rest{base: apiBase(baseURL, "/api/v1"), headers: h, hc: hc, s: s, message: jsonMessage}}, nil
}

// EnsurePR implements Forge.
func (g *giteaForge) EnsurePR(ctx context.Context, pr PR) (PRInfo, error) {
	return ensure(ctx, &g.locks, g, pr)
}

// giteaPull is the part of Gitea's PullRequest the driver reads.
type giteaPull struct {
	Number  int    `json:"number"`
	HTMLURL string `json:"html_url"`
	State   string `json:"state"` // open, closed
	Merged  bool   `json:"merged"`
	Title   string `json:"title"`
	Body    string `json:"body"`
	Head    *struct {
		Ref    string `json:"ref"`
		RepoID int64  `json:"repo_id"`
	} `json:"head"`
	Base *struct {
		Ref    string `json:"ref"`
		RepoID int64  `json:"repo_id"`
	} `json:"base"`
}

func (p *giteaPull) current() current {
	c := current{Number: p.Number, URL: p.HTMLURL, State: StateOpen, Title: p.Title, Body: p.Body}
	switch {
	case p.Merged:
		c.State = StateMerged
	case p.State == "closed":
		c.State = StateClosed
	}
	if p.Base != nil {
		c.Base = p.Base.Ref
	}
	return c
}

// pulls is the path of pr's repository's pull requests.
func (pr PR) pulls() string {
	return "/repos/" + url.PathEscape(pr.Owner) + "/" + url.PathEscape(pr.Repo) + "/pulls"
}

func (g *giteaForge) get(ctx context.Context, pr PR, number int) (current, error) {
	var p giteaPull
	if _, err := g.api.call(ctx, "read pull request", pr, http.MethodGet, pr.pulls()+numberPath(number), nil, nil, &p); err != nil {
		return current{}, err
	}
	return p.current(), nil
}

// giteaPageSize is the page size of the listing (Gitea's default maximum).
const giteaPageSize = 50

func (g *giteaForge) findOpen(ctx context.Context, pr PR) (*current, error) {
	// The API has no head filter for open pull requests: list them all,
	// oldest first, so that the first match is the one opened first.
	for page := 1; ; {
		q := url.Values{"state": {"open"}, "sort": {"oldest"}, "page": {strconv.Itoa(page)}, "limit": {strconv.Itoa(giteaPageSize)}}
		var ps []giteaPull
		h, err := g.api.call(ctx, "list pull requests", pr, http.MethodGet, pr.pulls(), q, nil, &ps)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			// A pull request from a fork's branch of the same name is not ours.
			if p.Head == nil || p.Base == nil || p.Head.Ref != pr.Head || p.Head.RepoID != p.Base.RepoID {
				continue
			}
			cur := p.current()
			return &cur, nil
		}
		next := nextPage(h)
		if len(ps) == 0 || next <= page {
			return nil, nil
		}
		page = next
	}
}

func (g *giteaForge) create(ctx context.Context, pr PR) (current, error) {
	in := struct {
		Head  string `json:"head"`
		Base  string `json:"base"`
		Title string `json:"title"`
		Body  string `json:"body"`
	}{pr.Head, pr.Base, pr.Title, pr.Body}
	var p giteaPull
	if _, err := g.api.call(ctx, "open pull request", pr, http.MethodPost, pr.pulls(), nil, in, &p); err != nil {
		return current{}, err
	}
	return p.current(), nil
}

func (g *giteaForge) update(ctx context.Context, pr PR, number int, ch change) (current, error) {
	in := struct {
		Title *string `json:"title,omitempty"`
		Body  *string `json:"body,omitempty"`
		Base  *string `json:"base,omitempty"`
	}{ch.Title, ch.Body, ch.Base}
	var p giteaPull
	if _, err := g.api.call(ctx, "update pull request", pr, http.MethodPatch, pr.pulls()+numberPath(number), nil, in, &p); err != nil {
		return current{}, err
	}
	return p.current(), nil
}
