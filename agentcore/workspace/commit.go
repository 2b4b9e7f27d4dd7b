package workspace

import (
	"cmp"
	"context"
	"slices"
	"strings"
)

// CommitOptions is what Commit records.
type CommitOptions struct {
	Message string
	// AuthorName and AuthorEmail are the commit's author and committer; ""
	// is the bot's identity (Options.Name, Options.Email).
	AuthorName, AuthorEmail string
	// Trailers are "Token: value" lines appended to the message's trailer
	// block, e.g. "Co-authored-by: Ann <ann@example.com>" or
	// "Requested-by: ann (slack:U123)". An exact duplicate is added once.
	Trailers []string
}

// Commit commits everything uncommitted in wt (git add --all: changes,
// deletions, untracked files that are not ignored) and returns the new
// commit's id, or "" when there was nothing to commit. It runs on wt's
// side (wt.Agent), with the bot's identity as committer; hooks do not run.
func (g *Git) Commit(ctx context.Context, wt Worktree, opt CommitOptions) (string, error) {
	msg, err := commitMessage(opt.Message, opt.Trailers)
	if err != nil {
		return "", err
	}
	chat, err := g.chat(wt)
	if err != nil {
		return "", err
	}
	changed, err := changedFiles(ctx, chat)
	if err != nil || len(changed) == 0 {
		return "", err
	}
	if _, err := chat.run(ctx, "add", "--all", "--", "."); err != nil {
		return "", err
	}
	name, email := cmp.Or(opt.AuthorName, g.name), cmp.Or(opt.AuthorEmail, g.email)
	_, err = chat.exec(ctx, call{
		args:  []string{"commit", "--quiet", "--no-verify", "--file=-"},
		stdin: strings.NewReader(msg),
		env:   identityEnv(name, email, name, email),
	})
	if err != nil {
		return "", err
	}
	return chat.objectID(ctx, "HEAD")
}

// identityEnv sets a commit's author and committer.
func identityEnv(author, authorEmail, committer, committerEmail string) []string {
	return []string{
		"GIT_AUTHOR_NAME=" + author, "GIT_AUTHOR_EMAIL=" + authorEmail,
		"GIT_COMMITTER_NAME=" + committer, "GIT_COMMITTER_EMAIL=" + committerEmail,
	}
}

// commitMessage is msg with trailers appended: to msg's own trailer block
// when its last paragraph (not its subject) is one, else as a new paragraph.
func commitMessage(msg string, trailers []string) (string, error) {
	msg = strings.TrimSpace(msg)
	if msg == "" {
		return "", invalid("the commit message is empty")
	}
	for _, t := range trailers {
		if !isTrailer(t) {
			return "", invalid("%q is not a trailer (Token: value)", t)
		}
	}
	paras := strings.Split(msg, "\n\n")
	last := paras[len(paras)-1]
	var block []string
	if len(paras) > 1 && allTrailers(last) {
		block = strings.Split(last, "\n")
		paras = paras[:len(paras)-1]
	}
	for _, t := range trailers {
		if !slices.Contains(block, t) {
			block = append(block, t)
		}
	}
	if len(block) > 0 {
		paras = append(paras, strings.Join(block, "\n"))
	}
	return strings.Join(paras, "\n\n") + "\n", nil
}

// allTrailers tells whether every line of para is a trailer.
func allTrailers(para string) bool {
	for line := range strings.SplitSeq(para, "\n") {
		if !isTrailer(line) {
			return false
		}
	}
	return true
}

// isTrailer tells whether line is "Token: value": a token of letters,
// digits and hyphens, a colon, a space and a value on one line.
func isTrailer(line string) bool {
	token, value, ok := strings.Cut(line, ": ")
	if !ok || token == "" || strings.TrimSpace(value) == "" || strings.ContainsAny(line, "\n\r") {
		return false
	}
	for _, c := range token {
		if !(c == '-' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// changedFiles lists the changed and untracked files of the clone r (git
// status; a renamed file once, by its new name).
func changedFiles(ctx context.Context, r repo) ([]string, error) {
	out, err := r.exec(ctx, call{args: []string{"status", "--porcelain", "-z", "--untracked-files=all"}})
	if err != nil {
		return nil, err
	}
	var files []string
	entries := splitNUL(string(out))
	for i := 0; i < len(entries); i++ {
		e := entries[i]
		if len(e) < 4 {
			continue
		}
		files = append(files, e[3:])
		if e[0] == 'R' || e[0] == 'C' {
			i++ // the old name follows
		}
	}
	return files, nil
}
