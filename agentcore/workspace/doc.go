// Package workspace owns git: each chat works in its own clone of its
// project on its own branch, and the bot, not the agent, shows the diff,
// commits, pushes, merges and cleans up. No other package runs git.
//
// # Two sides
//
// A chat's agent runs as an unprivileged user (one for all chats) inside a
// sandbox that lets it write only its own chat's directory. Its repository
// is therefore the agent's: it writes the files, the objects, the refs and
// the configuration, and a repository's configuration and attributes can
// name programs that git runs (filter drivers, textconv and external
// diffs, core.fsmonitor, hooks, core.sshCommand, upload-pack, credential
// helpers, remote helpers, includes). So every git call belongs to one of
// two sides, and the package keeps them apart by construction (an internal
// repository value carries the side; there is no call that takes a bare
// directory):
//
//   - The bot's side: the main clone (or a channel's own repository), the
//     bot's and only ever written by the bot. Git runs there as the bot,
//     through Options.Cmd, with the bot's environment, Options.Env (ssh
//     key, agent socket) and the credential of a push. Clone, Check,
//     IsRepo, Push, ShipDiff, the landing half of Merge and the receiving
//     half of Import run here, and nothing else.
//   - The agent's side: a chat's clone (and a spare). Git runs there
//     through that chat's Worktree.Agent hook, which the caller sets per
//     chat (the agent's uid and gid, that chat's sandbox), with PATH and
//     the fixed variables only (nothing of the bot's environment, which
//     may hold secrets), no global config, no Options.Config and a ceiling
//     above the clone so git never finds a repository above it. Create and
//     Fork (the clone and checkout), Snapshot, Stat, BranchDiff, Commit,
//     Include's copies, Unpushed's counting, the rebase of Merge and the
//     sending half of Import run here. What the agent's configuration
//     makes git run (a clean filter during Snapshot) runs as the agent, in
//     its sandbox, never as the bot.
//
// A nil Agent runs the agent's side as the bot, for tests and bots without
// isolation; Options.RequireAgent turns that into an error, so that a
// forgotten hook never runs git as the bot in a repository an agent wrote.
// Git refuses it too once the agent's user owns the clone (dubious
// ownership, ErrUnsafeRepo), unless Options.Config trusts every directory.
//
// Between the sides only data travels: a commit id the bot checks to be a
// full object id, a pack the bot verifies (Import), a patch of files the
// agent's git applies (Include). The bot never reads a chat's
// configuration, never runs git with a chat's clone, git directory or
// object directory as its repository, and never runs a program from it.
//
// # Why a chat's clone is not a git worktree
//
// A git worktree shares its repository's .git: objects, refs, packed-refs,
// config and the other worktrees' administrative files. If the sandbox let
// the agent write it, chat A could rewrite chat B's branch, corrupt the
// shared objects or configure programs the bot would then run; if it did
// not, the agent's own git add and git commit would fail. A clone made with
// git clone --shared has a .git of its own, so the sandbox can grant the
// agent its whole clone and nothing of the main clone's, and it stays cheap:
// objects/info/alternates points at the main clone's objects, which it
// reads and never writes; the agent's new objects go into its own store.
//
// # Layout
//
// A project that owns a repository has one main clone (Clone), made once:
// the source is cloned, its base branch checked out and HEAD then detached.
// The main clone is never worked in. Its files stay as they were cloned and
// serve only as the source of the ignored files a chat's clone gets
// (Include: .env and the like, chosen by .worktreeinclude); its
// refs/heads/<base> is the landing place of merges and its
// refs/heads/<branch> the chat's work as last imported. Its git directory
// is readable (never writable) by every user (core.sharedRepository=0644)
// and its directory traversable, since the chats' clones borrow its
// objects; the directories above it must be traversable too. A channel work
// directory that is already a repository (IsRepo) plays the same part
// without a clone, and must be readable by the agent's user likewise.
//
// Each chat has a Worktree: its own clone at its own directory (given by
// the caller, outside the main clone; made with Options.MakeDir when
// missing, so that the agent's user owns it), cloned from the main clone
// (origin, tracking only the base), on its own branch, BranchName(prefix,
// first prompt, chat id), e.g. threadline/fix-the-login-form-3f2a9c1e.
// Create makes it at the base (or at the main clone's branch of the chat,
// when it has one), Fork from another chat's clone (its HEAD plus its
// uncommitted work, from a Snapshot, so the parent is not touched); both
// are idempotent, so a restarted bot just goes on. Remove takes it away
// (Options.RemoveDir: the agent's files, which a bot that is not root may
// not delete), and the main clone's branch of the chat when discarded or
// merged, refusing to lose work that is not pushed. The main clone keeps a
// record of its chat clones and spares in its git directory (mode 0700:
// List, Prune).
//
// Checking out a large tree is the slow part of a new clone (seconds for
// 10,000 files on a slow disk). Spare prepares one ahead, in the
// background, through a hook confined to it: a clone at the base beside
// the chats' clones, which the next Create or Fork renames into place and
// brings to its start with a checkout of the files that differ.
//
// # A turn and shipping
//
// On the agent's side, for the footer of a turn: Snapshot is the tree of a
// clone's whole working state (untracked files included), written through
// a second index of the clone's, so neither the agent's index nor HEAD
// changes; Stat between the snapshots before and after a turn is the
// turn's footer ("3 files changed, +40 −2"); BranchDiff is the whole
// change of a chat against its base, uncommitted work included.
//
// To ship, the caller commits on the agent's side (Commit, as the bot's
// identity, with trailers), then Import brings the branch into the main
// clone: the agent's git packs what the main clone lacks, the bot's git
// index-pack --strict reads that pack from a pipe into the main clone's own
// store (every object's id computed from its content, malformed objects
// refused, a size limit), the bot checks that the main clone now has the
// commit and all it reaches, and sets its refs/heads/<branch>. ShipDiff is
// then computed in the main clone from imported commits only (what the
// gate scans), and Push sends that exact commit from the main clone, with
// the credential only there. Unpushed says what only the chat holds.
//
// # How a merge touches no other tree
//
// Merge syncs the base on the bot's side (fetched from the main clone's
// remote), rebases the chat's branch onto it inside the chat's clone, on
// the agent's side (the base's commits are in the borrowed objects, so
// nothing is copied), imports the result, pushes it to the remote's base
// and then moves the main clone's refs/heads/<base> with a compare-and-swap
// update-ref. Only a ref moves: the main clone's HEAD is detached, so its
// files and status do not change, and Merge refuses a base checked out in
// any working tree (ErrBaseCheckedOut), which would see its files go
// stale. A remote that moved on is ErrNotFastForward after three tries. A
// conflict aborts the rebase, so the clone is as it was, and returns a
// *ConflictError listing the files; nothing lands.
//
// # The runner
//
// Every git call goes through one runner (Git): a time limit per call (a
// clone has a longer one; an Import's two processes share one), git in its
// own process group, killed with its children (ssh, remote helpers,
// filters) at the limit or when the context ends; no prompt, pager or
// editor; the C locale; no system configuration; and, on both sides, no
// hooks, fsmonitor, credential helpers, askpass or signing.
// Configuration travels in GIT_CONFIG_COUNT variables, so a credential
// (Credential, an HTTP header) is never in argv or in a URL, and it is
// removed from every error. Failures are *GitError values with git's own
// words, wrapping the outcome a front-end words: ErrNotRepo,
// ErrBaseMissing, ErrNotFastForward, ErrConflict, ErrUnpushed, ErrImport,
// ErrTimeout, ...
package workspace
