package forge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Forge opens and updates pull requests on one forge, with one token.
type Forge interface {
	// EnsurePR makes the pull request of pr.Head match pr: with pr.Number 0
	// it updates the open pull request whose head is pr.Head, or opens one;
	// with pr.Number > 0 it updates that pull request, whatever its state.
	// Title, body and base are written only when they differ.
	EnsurePR(ctx context.Context, pr PR) (PRInfo, error)
}

// PR is the pull request a branch should have.
type PR struct {
	// Owner is the user or organisation owning the repository; on GitLab,
	// the whole namespace ("group/subgroup").
	Owner string
	// Repo is the repository's name.
	Repo string
	// Head is the branch with the changes, in the same repository.
	Head string
	// Base is the branch the changes go into.
	Base string
	// Title and Body describe the pull request (Body may be empty).
	Title, Body string
	// Number is the pull request to update (0: the open one of Head, or a
	// new one). On GitLab it is the merge request's iid.
	Number int
}

// State is a pull request's state.
type State string

// The states of a pull request.
const (
	StateOpen   State = "open"
	StateClosed State = "closed" // closed without being merged
	StateMerged State = "merged"
)

// PRInfo is a pull request as the forge reports it after EnsurePR.
type PRInfo struct {
	// Number is the pull request's number (GitLab: the iid).
	Number int
	// URL is its web page.
	URL string
	// State is its state.
	State State
	// Opened reports whether this call opened it (false: it existed).
	Opened bool
}

// Kinds of forge New knows.
const (
	KindGitea  = "gitea"
	KindGitHub = "github"
	KindGitLab = "gitlab"
)

// The errors of the package. Each error wraps one of them.
var (
	// ErrUnauthorized: the forge did not accept the token (HTTP 401).
	ErrUnauthorized = errors.New("the forge did not accept the token")
	// ErrForbidden: the token is valid but may not do this (HTTP 403).
	ErrForbidden = errors.New("the token is not allowed to do this")
	// ErrNotFound: the repository or pull request does not exist, or the
	// token cannot see it (HTTP 404).
	ErrNotFound = errors.New("not found on the forge, or not visible to the token")
	// ErrRejected: the forge refused the request as it stands (HTTP 409 or
	// 422: no commits between the branches, an unknown branch, ...).
	ErrRejected = errors.New("the forge refused the request")
	// ErrUnavailable: the forge did not answer, was overloaded or rate
	// limited the token (network errors, HTTP 429 and 5xx); try again later.
	ErrUnavailable = errors.New("the forge did not answer")
	// ErrInvalid: the request or configuration is incomplete (no owner,
	// head, base or title; an unknown kind; no token; a bad base URL).
	ErrInvalid = errors.New("incomplete forge request")
)

// DefaultTimeout bounds each request when New is given no HTTP client.
const DefaultTimeout = 30 * time.Second

// New returns the Forge of the kind (KindGitea, KindGitHub or KindGitLab) at
// baseURL with the token. baseURL is the forge's web root (Gitea, GitLab:
// "https://git.example.com"; a GitLab or GitHub Enterprise API URL is
// accepted too); for GitHub, "" means github.com. httpClient may be nil (a
// client with DefaultTimeout); New does not change it.
func New(kind, baseURL, token string, httpClient *http.Client) (Forge, error) {
	if strings.TrimSpace(token) == "" {
		return nil, fmt.Errorf("%w: no token", ErrInvalid)
	}
	if httpClient == nil {
		httpClient = &http.Client{Timeout: DefaultTimeout}
	}
	if baseURL != "" {
		u, err := url.Parse(baseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("%w: the base URL %q is not an http(s) address", ErrInvalid, scrub(baseURL, token))
		}
		if u.User != nil {
			return nil, fmt.Errorf("%w: the base URL must not carry credentials (%s)", ErrInvalid, u.Redacted())
		}
	}
	s := scrubber{token: token}
	switch kind {
	case KindGitea:
		return newGitea(baseURL, token, httpClient, s)
	case KindGitHub:
		return newGitHub(baseURL, token, httpClient, s)
	case KindGitLab:
		return newGitLab(baseURL, token, httpClient, s)
	}
	return nil, fmt.Errorf("%w: unknown forge kind %q (gitea, github or gitlab)", ErrInvalid, kind)
}

// check reports what is missing from pr.
func (pr PR) check() error {
	var missing []string
	for _, f := range []struct{ name, v string }{{"owner", pr.Owner}, {"repository", pr.Repo}, {"head branch", pr.Head}, {"base branch", pr.Base}, {"title", pr.Title}} {
		if strings.TrimSpace(f.v) == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: no %s", ErrInvalid, strings.Join(missing, ", "))
	}
	if pr.Head == pr.Base {
		return fmt.Errorf("%w: the head and base branch are both %q", ErrInvalid, pr.Head)
	}
	if pr.Number < 0 {
		return fmt.Errorf("%w: pull request number %d", ErrInvalid, pr.Number)
	}
	return nil
}

// repoName is "owner/repo" for messages.
func (pr PR) repoName() string { return pr.Owner + "/" + pr.Repo }

// maxMessage bounds the forge's message kept in an error.
const maxMessage = 300

// scrubber turns the clients' errors into the package's, without the token.
type scrubber struct{ token string }

// scrub removes the token (as is and URL-escaped) from s.
func scrub(s, token string) string {
	if token == "" {
		return s
	}
	for _, t := range []string{token, url.QueryEscape(token), url.PathEscape(token)} {
		s = strings.ReplaceAll(s, t, "[redacted]")
	}
	return s
}

// fail returns the error of op on repo: ctx's error when it ended, else the
// sentinel of the HTTP status (0: no answer) with the forge's message.
func (s scrubber) fail(ctx context.Context, op, repo string, status int, msg string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s %s: %w", op, repo, err)
	}
	msg = strings.Join(strings.Fields(scrub(msg, s.token)), " ")
	if len(msg) > maxMessage {
		msg = msg[:maxMessage] + "…"
	}
	kind := statusError(status)
	if kind == nil {
		return fmt.Errorf("%s %s: HTTP %d: %s", op, repo, status, msg)
	}
	if status != 0 {
		msg = fmt.Sprintf("HTTP %d: %s", status, msg)
	}
	return fmt.Errorf("%s %s: %w (%s)", op, repo, kind, strings.TrimSuffix(msg, ": "))
}

// statusError is the sentinel of an HTTP status (0: no answer), or nil.
func statusError(status int) error {
	switch {
	case status == 0:
		return ErrUnavailable
	case status == http.StatusUnauthorized:
		return ErrUnauthorized
	case status == http.StatusForbidden:
		return ErrForbidden
	case status == http.StatusNotFound:
		return ErrNotFound
	case status == http.StatusConflict || status == http.StatusUnprocessableEntity:
		return ErrRejected
	case status == http.StatusTooManyRequests || status >= 500:
		return ErrUnavailable
	case status == http.StatusBadRequest:
		return ErrRejected
	}
	return nil
}

// errorf returns an error wrapping kind, with the message after it.
func errorf(kind error, format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{kind}, args...)...)
}
