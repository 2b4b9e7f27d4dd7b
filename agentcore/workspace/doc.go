// Package workspace owns git: each chat works in its own git worktree on its
// own branch, and the bot, not the agent, shows the diff, commits, pushes,
// merges and cleans up. No other package runs git.
//
// # Layout
//
// A project that owns a repository has one main clone (Clone), made once:
// the source is cloned, its base branch checked out and HEAD then detached.
// The main clone is never worked in. Its files stay as they were cloned and
// serve only as the source of the ignored files a worktree gets (Include:
// .env and the like, chosen by .worktreeinclude); its refs/heads/<base> is
// the landing place of merges. A channel work directory that is already a
// repository (IsRepo) plays the same part without a clone.
//
// Each chat has a Worktree: its own directory (given by the caller, outside
// the main clone) on its own branch, BranchName(prefix, first prompt, chat
// id), e.g. threadline/fix-the-login-form-3f2a9c1e. Create makes it from the
// base, Fork from another chat's worktree (its HEAD plus its uncommitted
// work, copied from a Snapshot so the parent is not touched); both are
// idempotent, so a restarted bot just goes on. Remove takes it away, and its
// branch when discarded or merged, refusing to lose unpushed work.
//
// Checking out a large tree is the slow part of a new worktree (seconds for
// 10,000 files on a slow disk). Spare prepares one ahead, in the background:
// a detached, locked checkout of the base beside the worktrees, which the
// next Create or Fork renames into place and brings to its start with a
// checkout of the files that differ.
//
// # A turn and shipping
//
// Snapshot is the tree of a worktree's whole working state (untracked files
// included), written through a temporary index, so neither the agent's
// index nor HEAD changes; Stat between the snapshots before and after a turn
// is the turn's footer ("3 files changed, +40 −2"). BranchDiff is the whole
// change of a chat against its base. Commit commits as the bot, with
// trailers; Push sends the branch; Unpushed says what only the worktree
// holds.
//
// # How a merge touches no other tree
//
// Merge rebases the chat's branch onto the base inside the chat's own
// worktree, then moves refs/heads/<base> with a compare-and-swap update-ref.
// Only a ref moves: the main clone's HEAD is detached, so its files and
// status do not change, and Merge refuses a base checked out in any working
// tree (ErrBaseCheckedOut), which would see its files go stale. With a
// remote, the base is fetched first and the rebased commits pushed to it
// before the local ref moves; a remote that moved on is ErrNotFastForward. A
// conflict aborts the rebase, so the worktree is as it was, and returns a
// *ConflictError listing the files.
//
// # The runner
//
// Every git call goes through one runner (Git): a time limit per call (a
// clone has a longer one), git in its own process group, killed with its
// children (ssh, remote helpers) at the limit or when the context ends;
// no prompt, pager or editor; the C locale; no system or global
// configuration and no hooks, fsmonitor, credential helpers, askpass, ssh
// command or signing from the repositories, so what an agent writes into
// its worktree or the hooks does not run as the bot (the main clone's
// .git/config must stay out of the agent's reach: a repository's config
// can name more programs than these). Configuration travels in GIT_CONFIG_COUNT
// variables, so a credential (Credential, an HTTP header) is never in argv
// or in a URL, and it is removed from every error. Failures are *GitError
// values with git's own words, wrapping the outcome a front-end words:
// ErrNotRepo, ErrBaseMissing, ErrNotFastForward, ErrConflict,
// ErrUnpushed, ErrTimeout, ... Options.Cmd lets the caller run git as
// another user.
package workspace
