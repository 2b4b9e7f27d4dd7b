// Package forge opens and updates the pull request of a chat's branch on the
// project's forge: Gitea (and Forgejo), GitHub (and GitHub Enterprise) or
// GitLab (a merge request there), over each forge's REST API (see rest.go).
//
// One call does it: EnsurePR finds the open pull request whose head is the
// branch (or takes the one numbered in the request), updates its title, body
// and base when they differ, or opens one when there is none. Asking again
// updates the same pull request; it never opens a second one for a branch
// that has one open. Calls for one branch through one Forge run one at a
// time. Across processes, GitHub and GitLab refuse a second open pull
// request for a head and the losing call updates the winner's; Gitea 1.27
// does not refuse it (measured), so one branch must not be asked for from two
// processes at once.
//
// Errors wrap one of the sentinels (ErrUnauthorized, ErrForbidden,
// ErrNotFound, ErrRejected, ErrUnavailable, ErrInvalid) with plain words a
// chat front-end can show; the forge's own message is kept, but the token is
// never part of an error: every message is scrubbed of it, and a base URL
// carrying credentials is refused. The package does not log.
//
// ParseRemote reads the owner and repository from a git remote address (https,
// ssh and scp-like forms, GitLab subgroups).
//
// The Gitea implementation is tested against a real Gitea (giteatest); the
// GitHub and GitLab ones against local servers that check each request's
// method, path, query and JSON body as the APIs' documentation gives them.
package forge
