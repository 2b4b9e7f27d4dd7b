package forge

import (
	"context"
	"net/http"
	"strings"

	"code.gitea.io/sdk/gitea"
)

// giteaForge drives Gitea's API (/api/v1) with code.gitea.io/sdk/gitea.
type giteaForge struct {
	base  string
	token string
	hc    *http.Client
	s     scrubber
	locks branchLocks
}

func newGitea(baseURL, token string, hc *http.Client, s scrubber) (Forge, error) {
	if baseURL == "" {
		return nil, errorf(ErrInvalid, "a Gitea forge needs its base URL")
	}
	return &giteaForge{base: strings.TrimSuffix(baseURL, "/"), token: token, hc: hc, s: s}, nil
}

// EnsurePR implements Forge.
func (g *giteaForge) EnsurePR(ctx context.Context, pr PR) (PRInfo, error) {
	return ensure(ctx, &g.locks, g, pr)
}

// client returns a client bound to ctx. The SDK takes its context per
// client, so each call gets its own; SetGiteaVersion("") skips the version
// probe NewClient would otherwise make.
func (g *giteaForge) client(ctx context.Context) (*gitea.Client, error) {
	return gitea.NewClient(g.base, gitea.SetToken(g.token), gitea.SetHTTPClient(g.hc),
		gitea.SetContext(ctx), gitea.SetGiteaVersion(""))
}

// err converts the SDK's error of op.
func (g *giteaForge) err(ctx context.Context, op string, pr PR, resp *gitea.Response, err error) error {
	status := 0
	if resp != nil && resp.Response != nil {
		status = resp.StatusCode
	}
	return g.s.fail(ctx, op, pr.repoName(), status, err.Error())
}

func giteaCurrent(p *gitea.PullRequest) current {
	c := current{Number: int(p.Index), URL: p.HTMLURL, State: StateOpen, Title: p.Title, Body: p.Body}
	switch {
	case p.HasMerged:
		c.State = StateMerged
	case p.State == gitea.StateClosed:
		c.State = StateClosed
	}
	if p.Base != nil {
		c.Base = p.Base.Ref
	}
	return c
}

func (g *giteaForge) get(ctx context.Context, pr PR, number int) (current, error) {
	c, err := g.client(ctx)
	if err != nil {
		return current{}, g.err(ctx, "read pull request", pr, nil, err)
	}
	p, resp, err := c.GetPullRequest(pr.Owner, pr.Repo, int64(number))
	if err != nil {
		return current{}, g.err(ctx, "read pull request", pr, resp, err)
	}
	return giteaCurrent(p), nil
}

// giteaPageSize is the page size of the listing (Gitea's default maximum).
const giteaPageSize = 50

func (g *giteaForge) findOpen(ctx context.Context, pr PR) (*current, error) {
	c, err := g.client(ctx)
	if err != nil {
		return nil, g.err(ctx, "list pull requests", pr, nil, err)
	}
	// The API has no head filter for open pull requests: list them all,
	// oldest first, so that the first match is the one opened first.
	for page := 1; ; page++ {
		ps, resp, err := c.ListRepoPullRequests(pr.Owner, pr.Repo, gitea.ListPullRequestsOptions{
			ListOptions: gitea.ListOptions{Page: page, PageSize: giteaPageSize},
			State:       gitea.StateOpen,
			Sort:        "oldest",
		})
		if err != nil {
			return nil, g.err(ctx, "list pull requests", pr, resp, err)
		}
		for _, p := range ps {
			if p.Head == nil || p.Base == nil || p.Head.Ref != pr.Head || p.Head.RepoID != p.Base.RepoID {
				continue
			}
			cur := giteaCurrent(p)
			return &cur, nil
		}
		if len(ps) == 0 || resp == nil || resp.NextPage == 0 {
			return nil, nil
		}
	}
}

func (g *giteaForge) create(ctx context.Context, pr PR) (current, error) {
	c, err := g.client(ctx)
	if err != nil {
		return current{}, g.err(ctx, "open pull request", pr, nil, err)
	}
	p, resp, err := c.CreatePullRequest(pr.Owner, pr.Repo, gitea.CreatePullRequestOption{
		Head: pr.Head, Base: pr.Base, Title: pr.Title, Body: pr.Body,
	})
	if err != nil {
		return current{}, g.err(ctx, "open pull request", pr, resp, err)
	}
	return giteaCurrent(p), nil
}

func (g *giteaForge) update(ctx context.Context, pr PR, number int, ch change) (current, error) {
	c, err := g.client(ctx)
	if err != nil {
		return current{}, g.err(ctx, "update pull request", pr, nil, err)
	}
	opt := gitea.EditPullRequestOption{Body: ch.Body}
	if ch.Title != nil {
		opt.Title = *ch.Title
	}
	if ch.Base != nil {
		opt.Base = *ch.Base
	}
	p, resp, err := c.EditPullRequest(pr.Owner, pr.Repo, int64(number), opt)
	if err != nil {
		return current{}, g.err(ctx, "update pull request", pr, resp, err)
	}
	return giteaCurrent(p), nil
}
