package workspace

import (
	"errors"
	"fmt"
	"strings"
)

// The outcomes a front-end words for people. Every error this package returns
// for one of them wraps the sentinel (errors.Is), whatever else it carries.
var (
	// ErrNotRepo: the directory is not a git repository (or not a working tree).
	ErrNotRepo = errors.New("not a git repository")
	// ErrUnsafeRepo: git refuses the repository because another user owns it
	// (safe.directory).
	ErrUnsafeRepo = errors.New("the repository belongs to another user")
	// ErrCloneFailed: the source could not be cloned (wrong URL or path, no
	// access, network).
	ErrCloneFailed = errors.New("could not clone the repository")
	// ErrBaseMissing: the base branch does not exist.
	ErrBaseMissing = errors.New("the base branch does not exist")
	// ErrBaseCheckedOut: the base branch is checked out in some working tree,
	// so landing on it would change that tree's files under its owner.
	ErrBaseCheckedOut = errors.New("the base branch is checked out in a working tree")
	// ErrBranchInUse: the chat's branch has its clone in another directory.
	ErrBranchInUse = errors.New("the branch is checked out elsewhere")
	// ErrDirInUse: the chat's directory exists and is not this chat's clone.
	ErrDirInUse = errors.New("the directory is in use")
	// ErrNotFastForward: the remote (or the base) moved on; the push or the
	// merge would have overwritten someone else's commits.
	ErrNotFastForward = errors.New("the branch has moved on: not a fast-forward")
	// ErrAuth: the remote refused the credentials (or there were none).
	ErrAuth = errors.New("the remote refused the credentials")
	// ErrConflict: a merge stopped on conflicting changes (see ConflictError).
	ErrConflict = errors.New("conflicting changes")
	// ErrUncommitted: the chat's clone has changes that are not committed.
	ErrUncommitted = errors.New("uncommitted changes")
	// ErrUnpushed: removing the chat's clone would lose work (see
	// UnpushedError).
	ErrUnpushed = errors.New("work not pushed")
	// ErrImport: the chat's commits could not be brought into the main clone
	// (Import): the chat lacks an object, sent a malformed one or too much,
	// or named no commit.
	ErrImport = errors.New("the chat's work could not be imported")
	// ErrLocked: another git process holds the repository's index or a ref.
	ErrLocked = errors.New("another git process is running in this repository")
	// ErrTimeout: a git call (or a setup command) ran past its time limit and
	// was killed with everything it started.
	ErrTimeout = errors.New("timed out and was stopped")
	// ErrInvalid: an argument was refused before git ran (an empty commit
	// message, a malformed trailer, a relative path).
	ErrInvalid = errors.New("invalid argument")
)

// GitError is a failed git call: which command, its exit code and the last
// lines of what it printed on stderr (with any credential removed). Err is the
// outcome it was recognized as (ErrTimeout, ErrNotRepo, ...), or nil.
type GitError struct {
	Args   []string // git's arguments; they never hold a credential
	Dir    string   // where git ran
	Code   int      // exit code; -1 when git was killed
	Stderr string   // the tail of stderr, scrubbed
	Err    error    // the recognized outcome, or nil
}

// Error reads "git push failed: <the outcome> (<git's words>)", or
// "git fetch: timed out and was stopped".
func (e *GitError) Error() string {
	cmd := "git"
	if len(e.Args) > 0 {
		cmd += " " + e.Args[0]
	}
	if errors.Is(e.Err, ErrTimeout) {
		return cmd + ": " + ErrTimeout.Error()
	}
	detail := summarize(e.Stderr)
	if detail == "" {
		detail = fmt.Sprintf("exit status %d", e.Code)
	}
	if e.Err != nil {
		return cmd + " failed: " + e.Err.Error() + " (" + detail + ")"
	}
	return cmd + " failed: " + detail
}

// Unwrap returns the recognized outcome.
func (e *GitError) Unwrap() error { return e.Err }

// summarize keeps the last few meaningful lines of git's stderr, joined on
// one line: hints and blank lines go.
func summarize(stderr string) string {
	var keep []string
	for line := range strings.Lines(stderr) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "hint:") {
			continue
		}
		keep = append(keep, line)
	}
	if len(keep) > 3 {
		keep = keep[len(keep)-3:]
	}
	return strings.Join(keep, "; ")
}

// ConflictError is a merge that stopped on conflicting changes. Nothing
// landed and the chat's clone is as it was before the merge.
type ConflictError struct {
	Branch string   // the chat's branch
	Base   string   // the branch it was to land on
	Files  []string // the conflicting files, relative to the clone
}

// Error lists the conflicting files.
func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s conflicts with %s in %s", e.Branch, e.Base, listFiles(e.Files))
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// UnpushedError is work that removing a chat's clone would lose: commits
// that no remote and not the base hold, and changed or untracked files.
type UnpushedError struct {
	Branch  string
	Commits int
	Files   []string
}

// Error says what would be lost.
func (e *UnpushedError) Error() string {
	var parts []string
	if e.Commits > 0 {
		parts = append(parts, plural(e.Commits, "commit", "commits")+" not pushed")
	}
	if len(e.Files) > 0 {
		parts = append(parts, plural(len(e.Files), "changed file", "changed files")+" ("+listFiles(e.Files)+")")
	}
	return fmt.Sprintf("%s has %s: removing it would lose that work", e.Branch, strings.Join(parts, " and "))
}

// Is makes errors.Is(err, ErrUnpushed) true.
func (e *UnpushedError) Is(target error) bool { return target == ErrUnpushed }

// listFiles names up to five files and counts the rest.
func listFiles(files []string) string {
	const shown = 5
	if len(files) <= shown {
		return strings.Join(files, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(files[:shown], ", "), len(files)-shown)
}

// plural is "1 commit" or "3 commits".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// invalid is an ErrInvalid with its reason.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}
