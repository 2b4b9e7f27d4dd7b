package forge

import (
	"net/url"
	"strings"
)

// Remote is a repository's place on its forge, read from a git remote
// address.
type Remote struct {
	// Host is the forge's host, with the port when the address has one
	// (never credentials).
	Host string
	// Owner is the user or organisation; on GitLab, the whole namespace
	// ("group/subgroup").
	Owner string
	// Repo is the repository's name, without ".git".
	Repo string
}

// ParseRemote reads the owner and repository from a git remote address:
// https://host/owner/repo.git (http too, credentials ignored),
// ssh://git@host:2222/owner/repo.git, git://host/owner/repo and the
// scp-like git@host:owner/repo.git, with any number of GitLab subgroups
// (host/group/sub/repo: Owner "group/sub"). A forge served under a path
// prefix (https://host/gitlab/group/repo) cannot be told from a subgroup:
// configure its owner instead. Local paths and file:// are refused. The
// error wraps ErrInvalid and never repeats credentials.
func ParseRemote(remote string) (Remote, error) {
	s := strings.TrimSpace(remote)
	var host, path string
	switch {
	case s == "":
		return Remote{}, errorf(ErrInvalid, "no remote address")
	case strings.Contains(s, "://"):
		u, err := url.Parse(s)
		if err != nil {
			return Remote{}, errorf(ErrInvalid, "%q is not a repository address", withoutUserinfo(s))
		}
		switch strings.ToLower(u.Scheme) {
		case "http", "https", "ssh", "git", "git+ssh", "ssh+git":
		default:
			return Remote{}, errorf(ErrInvalid, "%q is not a forge's address (scheme %s)", withoutUserinfo(s), u.Scheme)
		}
		host, path = u.Host, u.Path
	default:
		// scp-like: [user@]host:path, where the host holds no slash.
		i := strings.IndexByte(s, ':')
		if i <= 0 || strings.ContainsAny(s[:i], "/\\") {
			return Remote{}, errorf(ErrInvalid, "%q is a local path, not a forge's address", s)
		}
		host, path = s[:i], s[i+1:]
		if at := strings.LastIndexByte(host, '@'); at >= 0 {
			host = host[at+1:]
		}
	}
	if host == "" || strings.ContainsAny(host, " /@") {
		return Remote{}, errorf(ErrInvalid, "%q names no forge host", withoutUserinfo(s))
	}
	path = strings.Trim(path, "/")
	path = strings.TrimSuffix(path, ".git")
	parts := strings.Split(path, "/")
	if len(parts) < 2 {
		return Remote{}, errorf(ErrInvalid, "%q names no owner and repository", withoutUserinfo(s))
	}
	for _, p := range parts {
		if p == "" || p == "." || p == ".." || strings.HasPrefix(p, "~") || strings.ContainsAny(p, " \t\\") {
			return Remote{}, errorf(ErrInvalid, "%q is not an owner/repository path", withoutUserinfo(s))
		}
	}
	return Remote{Host: host, Owner: strings.Join(parts[:len(parts)-1], "/"), Repo: parts[len(parts)-1]}, nil
}

// withoutUserinfo drops the credentials of a URL-like address for a message.
func withoutUserinfo(s string) string {
	i := strings.Index(s, "://")
	if i < 0 {
		return s
	}
	rest := s[i+3:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	if at := strings.LastIndexByte(rest[:end], '@'); at >= 0 {
		return s[:i+3] + "…@" + rest[at+1:]
	}
	return s
}
