package workspace

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
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
	Remote     string      // a remote's name of the main clone or a URL; "" is "origin"
	Credential *Credential // nil: what the transport has (an ssh key)
	// Head is the commit to push, one the main clone has (Import's answer,
	// the one ShipDiff scanned); "" is the main clone's refs/heads/<branch>.
	Head string
}

// Push sends wt's branch, as imported into the main clone (Import), to the
// remote's branch of the same name. It runs on the bot's side only, in the
// main clone: the credential never reaches the chat's side. A remote branch
// that has commits the pushed one lacks makes it fail with
// ErrNotFastForward; refused credentials with ErrAuth. A push to a remote
// of the main clone updates its remote-tracking branch, which Unpushed
// counts as pushed.
func (g *Git) Push(ctx context.Context, wt Worktree, opt PushOptions) error {
	if err := wt.check(); err != nil {
		return err
	}
	main := g.bot(wt.Main)
	head, err := importedHead(ctx, main, wt.Branch, opt.Head)
	if err != nil {
		return err
	}
	return g.push(ctx, main, cmp.Or(opt.Remote, "origin"), opt.Credential, head+":refs/heads/"+wt.Branch)
}

// push runs git push --porcelain of one refspec in the main clone main and
// recognizes a rejection.
func (g *Git) push(ctx context.Context, main repo, remote string, cred *Credential, refspec string) error {
	config, secrets := cred.config(remoteURL(ctx, main, remote))
	out, err := main.exec(ctx, call{
		args:    []string{"push", "--porcelain", "--no-verify", "--no-recurse-submodules", remote, refspec},
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

// remoteURL is the URL of remote in the main clone, or remote itself (a
// URL given as the remote).
func remoteURL(ctx context.Context, main repo, remote string) string {
	if u, err := main.run(ctx, "remote", "get-url", "--push", remote); err == nil {
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

// Pending is the work a chat holds that exists nowhere else.
type Pending struct {
	Commits int      // commits that no remote-tracking branch, not the pushed head and not the base hold
	Files   []string // changed and untracked files, not ignored
}

// Clean tells whether there is nothing pending.
func (p Pending) Clean() bool { return p.Commits == 0 && len(p.Files) == 0 }

// Unpushed is what wt holds that neither a remote nor its base has: the
// commits of its HEAD and branch that no remote-tracking branch of the
// main clone (as of its last push or fetch), not pushed (the last commit
// the caller pushed, "" for none) and not the main clone's
// refs/heads/<wt.Base> reach, and its uncommitted files. Imported but not
// pushed is not safe: Remove may drop the main clone's branch. The bot's
// side names those commits; the counting runs on wt's side, in its clone
// (which borrows the main clone's objects). A chat whose directory is gone
// has only the commits of its branch in the main clone, counted there.
func (g *Git) Unpushed(ctx context.Context, wt Worktree, pushed string) (Pending, error) {
	var p Pending
	if err := wt.check(); err != nil {
		return p, err
	}
	main := g.bot(wt.Main)
	safe, err := safeCommits(ctx, main, wt.Base, pushed)
	if err != nil {
		return p, err
	}
	r, tips := main, []string{}
	if dirExists(filepath.Join(wt.Dir, ".git")) {
		if r, err = g.chat(wt); err != nil {
			return p, err
		}
		if p.Files, err = changedFiles(ctx, r); err != nil {
			return p, err
		}
		tips = append(tips, "HEAD")
	}
	if ok, err := r.hasRef(ctx, "refs/heads/"+wt.Branch); err != nil {
		return p, err
	} else if ok {
		tips = append(tips, "refs/heads/"+wt.Branch)
	}
	if len(tips) == 0 {
		return p, nil
	}
	var in strings.Builder
	for _, t := range tips {
		in.WriteString(t + "\n")
	}
	for _, id := range safe {
		in.WriteString("^" + id + "\n")
	}
	out, err := r.exec(ctx, call{args: []string{"rev-list", "--count", "--stdin"}, stdin: strings.NewReader(in.String())})
	if err != nil {
		return p, err
	}
	p.Commits, err = strconv.Atoi(strings.TrimSpace(string(out)))
	return p, err
}

// safeCommits are the commits of main whose history is not lost with a
// chat: its remote-tracking branches, base and pushed (when main has it).
func safeCommits(ctx context.Context, main repo, base, pushed string) ([]string, error) {
	out, err := main.run(ctx, "for-each-ref", "--format=%(objectname)", "refs/remotes/")
	if err != nil {
		return nil, err
	}
	safe := strings.Fields(out)
	refs := []string{}
	if base != "" {
		refs = append(refs, "refs/heads/"+base)
	}
	if pushed != "" {
		if !isObjectID(pushed) {
			return nil, invalid("%q is not a commit id", pushed)
		}
		refs = append(refs, pushed)
	}
	for _, ref := range refs {
		id, err := main.refID(ctx, ref)
		if err != nil {
			return nil, err
		}
		if id != "" {
			safe = append(safe, id)
		}
	}
	return safe, nil
}
