package workspace

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
)

// Credential is an HTTPS token for a forge. It reaches git only through the
// environment, as an "Authorization: Basic" header scoped to the remote's
// host (http.<url>.extraHeader in GIT_CONFIG_VALUE_n): never in argv, never
// in a URL, and it is removed from every error text.
type Credential struct {
	// Username goes with the token: "x-access-token" (GitHub), "oauth2"
	// (GitLab), the account's name (Gitea); "" is "x-access-token".
	Username string
	Token    string
}

// config is the git configuration that sends c to remote, and the values
// to scrub from errors. A nil c sends nothing.
func (c *Credential) config(remoteURL string) (config, secrets []string) {
	if c == nil || c.Token == "" {
		return nil, nil
	}
	pair := cmp.Or(c.Username, "x-access-token") + ":" + c.Token
	basic := base64.StdEncoding.EncodeToString([]byte(pair))
	key := "http.extraHeader"
	if u, err := url.Parse(remoteURL); err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" {
		key = "http." + u.Scheme + "://" + u.Host + "/.extraHeader"
	}
	return []string{key + "=Authorization: Basic " + basic}, []string{basic, pair, c.Token}
}

// PushOptions says where Push sends the branch.
type PushOptions struct {
	Remote     string      // a remote's name or a URL; "" is "origin"
	Credential *Credential // nil: what the transport has (an ssh key)
}

// Push sends wt's branch to the remote's branch of the same name. A remote
// branch that has commits wt's branch lacks makes it fail with
// ErrNotFastForward; refused credentials with ErrAuth.
func (g *Git) Push(ctx context.Context, wt Worktree, opt PushOptions) error {
	ref := "refs/heads/" + wt.Branch
	return g.push(ctx, wt.Dir, cmp.Or(opt.Remote, "origin"), opt.Credential, ref+":"+ref)
}

// push runs git push --porcelain of one refspec and recognizes a rejection.
func (g *Git) push(ctx context.Context, dir, remote string, cred *Credential, refspec string) error {
	config, secrets := cred.config(g.remoteURL(ctx, dir, remote))
	out, err := g.exec(ctx, call{
		dir:     dir,
		args:    []string{"push", "--porcelain", "--no-verify", remote, refspec},
		config:  config,
		secrets: secrets,
	})
	if err == nil {
		return nil
	}
	reason, rejected := rejection(string(out))
	ge, _ := errors.AsType[*GitError](err)
	if rejected && ge != nil && (isNotFastForward(reason) || isRefRace(ge.Stderr)) {
		_, dst, _ := strings.Cut(refspec, ":")
		return fmt.Errorf("%w: %s refused %s (%s)", ErrNotFastForward, remote, strings.TrimPrefix(dst, "refs/heads/"), reason)
	}
	if rejected && ge != nil && ge.Stderr == "" {
		ge.Stderr = "rejected: " + reason
	}
	return err
}

// remoteURL is the URL of remote in dir's repository, or remote itself (a
// URL given as the remote).
func (g *Git) remoteURL(ctx context.Context, dir, remote string) string {
	if u, err := g.run(ctx, dir, "remote", "get-url", "--push", remote); err == nil {
		return u
	}
	return remote
}

// rejection finds a refused ref in push --porcelain's report: the line
// "!\tSRC:DST\t[rejected] (reason)" or "[remote rejected]".
func rejection(out string) (string, bool) {
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, "!\t") {
			parts := strings.SplitN(strings.TrimSpace(line), "\t", 3)
			return parts[len(parts)-1], true
		}
	}
	return "", false
}

// isRefRace tells a remote whose ref moved while it was taking the push
// (its own compare-and-swap failed): the remote moved on too.
func isRefRace(stderr string) bool {
	return strings.Contains(stderr, "cannot lock ref") && strings.Contains(stderr, "but expected")
}

// isNotFastForward tells the rejections that mean the remote moved on.
func isNotFastForward(reason string) bool {
	return strings.Contains(reason, "non-fast-forward") || strings.Contains(reason, "fetch first") ||
		strings.Contains(reason, "stale info")
}

// Pending is the work a worktree holds that exists nowhere else.
type Pending struct {
	Commits int      // commits that no remote-tracking branch and not the base hold
	Files   []string // changed and untracked files, not ignored
}

// Clean tells whether there is nothing pending.
func (p Pending) Clean() bool { return p.Commits == 0 && len(p.Files) == 0 }

// Unpushed is what wt holds that neither a remote nor its base has: commits
// of its HEAD and branch that no remote-tracking branch (as of the last
// push or fetch) and not refs/heads/<wt.Base> reach, and uncommitted files.
// A worktree whose directory is gone has only its branch's commits.
func (g *Git) Unpushed(ctx context.Context, wt Worktree) (Pending, error) {
	var p Pending
	dir, tips := wt.Dir, []string{}
	if _, err := os.Stat(dir); err != nil {
		dir = wt.Main
	} else {
		tips = append(tips, "HEAD")
		files, err := g.changedFiles(ctx, dir)
		if err != nil {
			return p, err
		}
		p.Files = files
	}
	if ok, err := g.hasRef(ctx, dir, "refs/heads/"+wt.Branch); err != nil {
		return p, err
	} else if ok {
		tips = append(tips, "refs/heads/"+wt.Branch)
	}
	if len(tips) == 0 {
		return p, nil
	}
	n, err := g.countCommits(ctx, dir, tips, wt.Base)
	p.Commits = n
	return p, err
}

// countCommits counts the commits reachable from tips and from no
// remote-tracking branch and not from base.
func (g *Git) countCommits(ctx context.Context, dir string, tips []string, base string) (int, error) {
	args := append([]string{"rev-list", "--count"}, tips...)
	args = append(args, "--not", "--remotes")
	if base != "" {
		ok, err := g.hasRef(ctx, dir, "refs/heads/"+base)
		if err != nil {
			return 0, err
		}
		if ok {
			args = append(args, "refs/heads/"+base)
		}
	}
	out, err := g.run(ctx, dir, args...)
	if err != nil {
		return 0, err
	}
	var n int
	_, err = fmt.Sscan(out, &n)
	return n, err
}
