package forge

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/go-github/v89/github"
)

// githubForge drives GitHub's REST API with go-github.
type githubForge struct {
	c *github.Client
	s scrubber

	locks branchLocks
}

// newGitHub returns the GitHub forge: github.com for "", https://github.com
// or https://api.github.com, else GitHub Enterprise Server at baseURL (whose
// API is under /api/v3/, which go-github adds).
func newGitHub(baseURL, token string, hc *http.Client, s scrubber) (Forge, error) {
	// WithHTTPClient copies hc; go-github then wraps the copy's transport
	// to add the token.
	opts := []github.ClientOptionsFunc{github.WithHTTPClient(hc), github.WithAuthToken(token)}
	if baseURL != "" {
		u, _ := url.Parse(baseURL) // checked by New
		if h := strings.ToLower(u.Hostname()); h != "github.com" && h != "api.github.com" {
			opts = append(opts, github.WithEnterpriseURLs(baseURL, baseURL))
		}
	}
	c, err := github.NewClient(opts...)
	if err != nil {
		return nil, errorf(ErrInvalid, "%s", scrub(err.Error(), token))
	}
	return &githubForge{c: c, s: s}, nil
}

// EnsurePR implements Forge.
func (g *githubForge) EnsurePR(ctx context.Context, pr PR) (PRInfo, error) {
	return ensure(ctx, &g.locks, g, pr)
}

// err converts go-github's error of op.
func (g *githubForge) err(ctx context.Context, op string, pr PR, err error) error {
	var (
		rate  *github.RateLimitError
		abuse *github.AbuseRateLimitError
		resp  *github.ErrorResponse
	)
	switch {
	case errors.As(err, &rate):
		return g.s.fail(ctx, op, pr.repoName(), http.StatusTooManyRequests, rate.Message)
	case errors.As(err, &abuse):
		return g.s.fail(ctx, op, pr.repoName(), http.StatusTooManyRequests, abuse.Message)
	case errors.As(err, &resp) && resp.Response != nil:
		msg := resp.Message
		for _, e := range resp.Errors {
			detail := e.Message
			if detail == "" {
				detail = strings.TrimSpace(e.Field + " " + e.Code)
			}
			msg += "; " + detail
		}
		return g.s.fail(ctx, op, pr.repoName(), resp.Response.StatusCode, msg)
	}
	return g.s.fail(ctx, op, pr.repoName(), 0, err.Error())
}

func githubCurrent(p *github.PullRequest) current {
	c := current{Number: p.GetNumber(), URL: p.GetHTMLURL(), State: StateOpen, Title: p.GetTitle(), Body: p.GetBody(), Base: p.GetBase().GetRef()}
	switch {
	case p.GetMerged() || p.MergedAt != nil:
		c.State = StateMerged
	case p.GetState() == "closed":
		c.State = StateClosed
	}
	return c
}

func (g *githubForge) get(ctx context.Context, pr PR, number int) (current, error) {
	p, _, err := g.c.PullRequests.Get(ctx, pr.Owner, pr.Repo, number)
	if err != nil {
		return current{}, g.err(ctx, "read pull request", pr, err)
	}
	return githubCurrent(p), nil
}

func (g *githubForge) findOpen(ctx context.Context, pr PR) (*current, error) {
	// head=owner:branch names a branch of the repository itself; the list is
	// newest first, so the last match is the one opened first.
	opts := &github.PullRequestListOptions{State: "open", Head: pr.Owner + ":" + pr.Head, ListOptions: github.ListOptions{PerPage: 100}}
	var found *current
	for {
		ps, resp, err := g.c.PullRequests.List(ctx, pr.Owner, pr.Repo, opts)
		if err != nil {
			return nil, g.err(ctx, "list pull requests", pr, err)
		}
		for _, p := range ps {
			if p.GetHead().GetRef() == pr.Head && p.GetState() == "open" {
				cur := githubCurrent(p)
				found = &cur
			}
		}
		if resp == nil || resp.NextPage == 0 {
			return found, nil
		}
		opts.Page = resp.NextPage
	}
}

func (g *githubForge) create(ctx context.Context, pr PR) (current, error) {
	p, _, err := g.c.PullRequests.Create(ctx, pr.Owner, pr.Repo, &github.NewPullRequest{
		Title: &pr.Title, Head: &pr.Head, Base: &pr.Base, Body: &pr.Body,
	})
	if err != nil {
		return current{}, g.err(ctx, "open pull request", pr, err)
	}
	return githubCurrent(p), nil
}

func (g *githubForge) update(ctx context.Context, pr PR, number int, ch change) (current, error) {
	edit := &github.PullRequest{Title: ch.Title, Body: ch.Body}
	if ch.Base != nil {
		edit.Base = &github.PullRequestBranch{Ref: ch.Base}
	}
	p, _, err := g.c.PullRequests.Edit(ctx, pr.Owner, pr.Repo, number, edit)
	if err != nil {
		return current{}, g.err(ctx, "update pull request", pr, err)
	}
	return githubCurrent(p), nil
}
