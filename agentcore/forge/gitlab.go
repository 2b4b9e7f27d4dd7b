package forge

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	gitlab "gitlab.com/gitlab-org/api/client-go/v2"
)

// gitlabForge drives GitLab's REST API (/api/v4) with client-go; a pull
// request there is a merge request, numbered by its iid.
type gitlabForge struct {
	c *gitlab.Client
	s scrubber

	locks branchLocks
}

// newGitLab returns the GitLab forge at baseURL ("": gitlab.com); client-go
// adds /api/v4 when it is missing. Retries are limited to idempotent
// requests (and 429s), so a POST that failed with a 5xx is not sent twice,
// and to two (client-go's backoff on a 5xx grows by 0.8 s a try: five tries
// kept a person waiting 12 s).
func newGitLab(baseURL, token string, hc *http.Client, s scrubber) (Forge, error) {
	opts := []gitlab.ClientOptionFunc{
		gitlab.WithHTTPClient(hc),
		gitlab.WithOnlyIdempotentRetries(),
		gitlab.WithCustomRetryMax(2),
		// client-go warns about odd URLs on slog.Default; the package does
		// not log.
		gitlab.WithURLWarningLogger(slog.New(slog.DiscardHandler)),
	}
	if baseURL != "" {
		opts = append(opts, gitlab.WithBaseURL(baseURL))
	}
	c, err := gitlab.NewClient(token, opts...)
	if err != nil {
		return nil, errorf(ErrInvalid, "%s", scrub(err.Error(), token))
	}
	return &gitlabForge{c: c, s: s}, nil
}

// EnsurePR implements Forge.
func (g *gitlabForge) EnsurePR(ctx context.Context, pr PR) (PRInfo, error) {
	return ensure(ctx, &g.locks, g, pr)
}

// pid is the project's path, which client-go escapes ("group%2Fsub%2Frepo").
func (pr PR) pid() string { return pr.Owner + "/" + pr.Repo }

// err converts client-go's error of op.
func (g *gitlabForge) err(ctx context.Context, op string, pr PR, resp *gitlab.Response, err error) error {
	var er *gitlab.ErrorResponse
	switch {
	case errors.As(err, &er):
		return g.s.fail(ctx, op, pr.repoName(), er.StatusCode, er.Message)
	case errors.Is(err, gitlab.ErrNotFound):
		return g.s.fail(ctx, op, pr.repoName(), http.StatusNotFound, "404 Not Found")
	case resp != nil && resp.Response != nil && resp.StatusCode/100 != 2:
		return g.s.fail(ctx, op, pr.repoName(), resp.StatusCode, err.Error())
	}
	return g.s.fail(ctx, op, pr.repoName(), 0, err.Error())
}

func gitlabCurrent(m *gitlab.BasicMergeRequest) current {
	c := current{Number: int(m.IID), URL: m.WebURL, State: StateOpen, Title: m.Title, Body: m.Description, Base: m.TargetBranch}
	switch m.State {
	case "merged":
		c.State = StateMerged
	case "closed":
		c.State = StateClosed
	}
	return c
}

func (g *gitlabForge) get(ctx context.Context, pr PR, number int) (current, error) {
	m, resp, err := g.c.MergeRequests.GetMergeRequest(pr.pid(), int64(number), nil, gitlab.WithContext(ctx))
	if err != nil {
		return current{}, g.err(ctx, "read merge request", pr, resp, err)
	}
	return gitlabCurrent(&m.BasicMergeRequest), nil
}

func (g *gitlabForge) findOpen(ctx context.Context, pr PR) (*current, error) {
	opts := &gitlab.ListProjectMergeRequestsOptions{
		ListOptions:  gitlab.ListOptions{PerPage: 100},
		State:        gitlab.Ptr("opened"),
		SourceBranch: gitlab.Ptr(pr.Head),
		OrderBy:      gitlab.Ptr("created_at"),
		Sort:         gitlab.Ptr("asc"),
	}
	for {
		ms, resp, err := g.c.MergeRequests.ListProjectMergeRequests(pr.pid(), opts, gitlab.WithContext(ctx))
		if err != nil {
			return nil, g.err(ctx, "list merge requests", pr, resp, err)
		}
		for _, m := range ms {
			// A merge request from a fork's branch of the same name is not ours.
			if m.SourceBranch == pr.Head && m.SourceProjectID == m.TargetProjectID && m.State == "opened" {
				cur := gitlabCurrent(m)
				return &cur, nil
			}
		}
		if resp == nil || resp.NextPage == 0 {
			return nil, nil
		}
		opts.Page = resp.NextPage
	}
}

func (g *gitlabForge) create(ctx context.Context, pr PR) (current, error) {
	m, resp, err := g.c.MergeRequests.CreateMergeRequest(pr.pid(), &gitlab.CreateMergeRequestOptions{
		Title: &pr.Title, Description: &pr.Body, SourceBranch: &pr.Head, TargetBranch: &pr.Base,
	}, gitlab.WithContext(ctx))
	if err != nil {
		return current{}, g.err(ctx, "open merge request", pr, resp, err)
	}
	return gitlabCurrent(&m.BasicMergeRequest), nil
}

func (g *gitlabForge) update(ctx context.Context, pr PR, number int, ch change) (current, error) {
	m, resp, err := g.c.MergeRequests.UpdateMergeRequest(pr.pid(), int64(number), &gitlab.UpdateMergeRequestOptions{
		Title: ch.Title, Description: ch.Body, TargetBranch: ch.Base,
	}, gitlab.WithContext(ctx))
	if err != nil {
		return current{}, g.err(ctx, "update merge request", pr, resp, err)
	}
	return gitlabCurrent(&m.BasicMergeRequest), nil
}
