// workspaces.go: the workspaces table (migration 0012), one row per chat's git
// worktree, and the one-creator rule across replicas (ClaimWorkspace).
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// States of a workspace.
const (
	// WorkspaceStateCreating: its owner is making the worktree (and running
	// the project's setup); UpdatedAt is the claim's heartbeat.
	WorkspaceStateCreating = "creating"
	// WorkspaceStateReady: the worktree exists and the chat works in it.
	WorkspaceStateReady = "ready"
	// WorkspaceStateFailed: the creation failed; Error says why.
	WorkspaceStateFailed = "failed"
	// WorkspaceStateRemoved: the worktree is gone; the row stays for history
	// and no longer holds its directory or branch.
	WorkspaceStateRemoved = "removed"
)

// Workspace is a chat's git worktree on its own branch.
type Workspace struct {
	ChatID string
	// Project is the chat's project; "" for a loose chat whose channel work
	// directory is a git repository.
	Project string
	// RepoDir is the repository the worktree belongs to: the project's main
	// clone or the loose chat's repository.
	RepoDir string
	// Path is the worktree's directory, Branch its branch and Base the branch
	// it started from and lands on (all without "refs/heads/").
	Path   string
	Branch string
	Base   string
	// ForkedFrom is the parent chat of a fork ("" for none).
	ForkedFrom string
	// State is one of the WorkspaceState constants.
	State string
	// Owner is the replica (host:pid) that claimed the creation.
	Owner string
	// Error says, in plain words, why the creation or setup failed.
	Error string
	// RequestedBy is who asked for the chat's first run (commit trailers).
	RequestedBy string
	// PRNumber and PRURL are the chat's pull request (0 and "": none).
	PRNumber int
	PRURL    string
	// PushedHead is the commit last pushed; TurnTree the snapshot tree at
	// the start of the current turn.
	PushedHead string
	TurnTree   string
	CreatedAt  time.Time
	// UpdatedAt is the last change of the row; while creating, the claim's
	// last heartbeat (ClaimWorkspace, TouchClaim).
	UpdatedAt time.Time
	// UsedAt is when the chat last used the worktree (TouchWorkspace).
	UsedAt time.Time
}

// WorkspaceFilter selects workspaces; its zero value selects them all.
type WorkspaceFilter struct {
	// Project keeps one project's workspaces ("": every workspace).
	Project string
	// States keeps the workspaces in one of these states (none: any).
	States []string
	// UsedBefore keeps the workspaces last used before it (zero: any).
	UsedBefore time.Time
}

type workspaceRow struct {
	ChatID      string    `db:"chat_id"`
	Project     string    `db:"project"`
	RepoDir     string    `db:"repo_dir"`
	Path        string    `db:"path"`
	Branch      string    `db:"branch"`
	Base        string    `db:"base"`
	ForkedFrom  string    `db:"forked_from"`
	State       string    `db:"state"`
	Owner       string    `db:"owner"`
	Error       string    `db:"error"`
	RequestedBy string    `db:"requested_by"`
	PRNumber    int       `db:"pr_number"`
	PRURL       string    `db:"pr_url"`
	PushedHead  string    `db:"pushed_head"`
	TurnTree    string    `db:"turn_tree"`
	CreatedAt   time.Time `db:"created_at"`
	UpdatedAt   time.Time `db:"updated_at"`
	UsedAt      time.Time `db:"used_at"`
}

func (r workspaceRow) workspace() Workspace {
	return Workspace{
		ChatID: r.ChatID, Project: r.Project, RepoDir: r.RepoDir, Path: r.Path, Branch: r.Branch, Base: r.Base,
		ForkedFrom: r.ForkedFrom, State: r.State, Owner: r.Owner, Error: r.Error, RequestedBy: r.RequestedBy,
		PRNumber: r.PRNumber, PRURL: r.PRURL, PushedHead: r.PushedHead, TurnTree: r.TurnTree,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(), UsedAt: r.UsedAt.UTC(),
	}
}

const (
	workspaceColumns = `chat_id, project, repo_dir, path, branch, base, forked_from, state, owner, error, requested_by,
pr_number, pr_url, pushed_head, turn_tree, created_at, updated_at, used_at`

	queryClaimNewWorkspace = `INSERT INTO workspaces (chat_id, project, repo_dir, path, branch, base, forked_from, state,
owner, requested_by, created_at, updated_at, used_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, 'creating', $8, $9, $10, $10, $10)
ON CONFLICT (chat_id) DO NOTHING RETURNING ` + workspaceColumns
	// A new creation in a failed or removed row: the caller's plan replaces
	// the old one; the pull request and pushed head stay when the branch of
	// the repository is the same. $11-$13 are the row as it was read.
	queryReclaimWorkspace = `UPDATE workspaces SET project = $2, repo_dir = $3, path = $4, branch = $5, base = $6,
forked_from = $7, state = 'creating', owner = $8, error = '', turn_tree = '',
requested_by = CASE WHEN requested_by = '' THEN $9 ELSE requested_by END,
pr_number = CASE WHEN repo_dir = $3 AND branch = $5 THEN pr_number ELSE 0 END,
pr_url = CASE WHEN repo_dir = $3 AND branch = $5 THEN pr_url ELSE '' END,
pushed_head = CASE WHEN repo_dir = $3 AND branch = $5 THEN pushed_head ELSE '' END,
updated_at = $10, used_at = $10
WHERE chat_id = $1 AND state = $11 AND owner = $12 AND updated_at = $13 RETURNING ` + workspaceColumns
	// A dead owner's creation goes on under the new owner, in the same
	// directory and branch. $4 and $5 are the claim as it was read.
	queryTakeOverWorkspace = `UPDATE workspaces SET owner = $2, updated_at = $3
WHERE chat_id = $1 AND state = 'creating' AND owner = $4 AND updated_at = $5 RETURNING ` + workspaceColumns

	queryGetWorkspace   = `SELECT ` + workspaceColumns + ` FROM workspaces WHERE chat_id = $1`
	queryWorkspaceState = `SELECT state FROM workspaces WHERE chat_id = $1`
	queryTouchClaim     = `UPDATE workspaces SET updated_at = $3 WHERE chat_id = $1 AND owner = $2 AND state = 'creating'`
	queryWorkspaceReady = `UPDATE workspaces SET state = 'ready', path = $2, branch = $3, error = '', updated_at = $4, used_at = $4
WHERE chat_id = $1 AND state IN ('creating', 'ready')`
	queryWorkspaceFailed = `UPDATE workspaces SET state = 'failed', error = $2, updated_at = $3
WHERE chat_id = $1 AND state = 'creating'`
	queryRemoveWorkspace = `UPDATE workspaces SET state = 'removed', updated_at = CASE WHEN state = 'removed' THEN updated_at ELSE $2 END
WHERE chat_id = $1`
	queryTouchWorkspace = `UPDATE workspaces SET used_at = $2 WHERE chat_id = $1 AND used_at < $2`
	queryWorkspaceExist = `SELECT COUNT(*) FROM workspaces WHERE chat_id = $1`
	// The setters below leave updated_at alone while creating: there it is
	// the claim's heartbeat, which only the owner moves.
	setWorkspaceUpdated  = `updated_at = CASE WHEN state = 'creating' THEN updated_at ELSE $3 END`
	queryWorkspaceTree   = `UPDATE workspaces SET turn_tree = $2, ` + setWorkspaceUpdated + ` WHERE chat_id = $1`
	queryWorkspacePushed = `UPDATE workspaces SET pushed_head = $2, ` + setWorkspaceUpdated + ` WHERE chat_id = $1`
	queryWorkspacePR     = `UPDATE workspaces SET pr_number = $2, pr_url = $4, ` + setWorkspaceUpdated + ` WHERE chat_id = $1`
)

// claimAttempts bounds ClaimWorkspace's retries: each one follows a change
// of the row by another caller, so a few always settle it.
const claimAttempts = 8

// ClaimWorkspace is the one-creator rule of a chat's worktree across
// replicas. w names the chat (ChatID), the claimant (Owner, its host:pid) and
// the worktree it would create (RepoDir, Path, Branch, Base, Project,
// ForkedFrom, RequestedBy); the other fields are ignored.
//
// claimed reports that the caller must create the worktree the returned row
// describes (which is not always w's plan), heartbeat with TouchClaim while
// it does, and end with WorkspaceReady or WorkspaceFailed:
//   - the chat has no workspace: a creating row of w is inserted (claimed);
//   - a ready one: it is returned, not claimed;
//   - a creating one whose claim was touched within staleAfter: it is
//     returned, not claimed (its owner, maybe the caller's own process, is
//     still at work);
//   - a creating one whose claim is older than staleAfter (its owner died):
//     the caller takes it over, same directory and branch, and continues it
//     (claimed);
//   - a failed or removed one: it becomes w's new creation (claimed);
//     requested_by stays if set, and the pull request and pushed head stay
//     when the repository and branch are the same.
//
// Each change is a compare-and-swap on the row as it was read, so of any
// number of concurrent claimants exactly one is told claimed. A Path or
// (RepoDir, Branch) another chat's live workspace holds is ErrConflict; a
// chat that does not exist is ErrNotFound.
func (s *Store) ClaimWorkspace(ctx context.Context, w Workspace, staleAfter time.Duration) (ws Workspace, claimed bool, err error) {
	switch {
	case w.ChatID == "" || w.Owner == "":
		return Workspace{}, false, fmt.Errorf("store: claim workspace of chat %q: chat id and owner are required", w.ChatID)
	case w.RepoDir == "" || w.Path == "" || w.Branch == "":
		return Workspace{}, false, fmt.Errorf("store: claim workspace of chat %s: repository, path and branch are required", w.ChatID)
	case staleAfter <= 0:
		return Workspace{}, false, fmt.Errorf("store: claim workspace of chat %s: staleAfter must be positive", w.ChatID)
	}
	for range claimAttempts {
		ws, claimed, done, err := s.claimOnce(ctx, w, staleAfter)
		if err != nil {
			return Workspace{}, false, fmt.Errorf("store: claim workspace of chat %s: %w", w.ChatID, err)
		}
		if done {
			return ws, claimed, nil
		}
	}
	return Workspace{}, false, fmt.Errorf("store: claim workspace of chat %s: the row kept changing under %d attempts", w.ChatID, claimAttempts)
}

// claimOnce is one attempt of ClaimWorkspace; done is false when the row
// changed between its read and its write, or vanished (try again).
func (s *Store) claimOnce(ctx context.Context, w Workspace, staleAfter time.Duration) (ws Workspace, claimed, done bool, err error) {
	t := now()
	var r workspaceRow
	err = s.db.GetContext(ctx, &r, queryClaimNewWorkspace, w.ChatID, w.Project, w.RepoDir, w.Path, w.Branch, w.Base,
		w.ForkedFrom, w.Owner, w.RequestedBy, t)
	switch {
	case err == nil:
		return r.workspace(), true, true, nil
	case isFKViolation(err):
		return Workspace{}, false, false, fmt.Errorf("chat: %w", ErrNotFound)
	case errors.Is(err, sql.ErrNoRows):
		// DO NOTHING: the chat has a workspace.
	case errors.Is(translate(err), ErrConflict):
		// Another chat's live workspace holds the path or branch, or (on
		// Postgres) a concurrent claim of this chat inserted the same
		// path first: then the chat has a row now.
		if _, gerr := s.Workspace(ctx, w.ChatID); gerr != nil {
			return Workspace{}, false, false, workspaceError(err)
		}
	default:
		return Workspace{}, false, false, translate(err)
	}

	cur, err := s.Workspace(ctx, w.ChatID)
	if errors.Is(err, ErrNotFound) {
		return Workspace{}, false, false, nil // deleted meanwhile: insert again
	}
	if err != nil {
		return Workspace{}, false, false, err
	}
	switch cur.State {
	case WorkspaceStateReady:
		return cur, false, true, nil
	case WorkspaceStateCreating:
		if t.Sub(cur.UpdatedAt) < staleAfter {
			return cur, false, true, nil
		}
		err = s.db.GetContext(ctx, &r, queryTakeOverWorkspace, w.ChatID, w.Owner, t, cur.Owner, cur.UpdatedAt)
	default: // failed, removed
		err = s.db.GetContext(ctx, &r, queryReclaimWorkspace, w.ChatID, w.Project, w.RepoDir, w.Path, w.Branch, w.Base,
			w.ForkedFrom, w.Owner, w.RequestedBy, t, cur.State, cur.Owner, cur.UpdatedAt)
	}
	switch terr := translate(err); {
	case err == nil:
		return r.workspace(), true, true, nil
	case errors.Is(terr, ErrNotFound):
		return Workspace{}, false, false, nil // changed meanwhile: read again
	case errors.Is(terr, ErrConflict):
		return Workspace{}, false, false, workspaceError(err)
	default:
		return Workspace{}, false, false, terr
	}
}

// workspaceError is translate, wording a unique violation of workspaces:
// which of the live directory or branch another chat's workspace holds.
func workspaceError(err error) error {
	name, _ := constraintOf(err)
	switch {
	case strings.Contains(name, "workspaces_live_path"), strings.Contains(name, "workspaces.path"):
		return fmt.Errorf("another chat's workspace has this directory: %w", ErrConflict)
	case strings.Contains(name, "workspaces_live_branch"), strings.Contains(name, "workspaces.branch"):
		return fmt.Errorf("another chat's workspace has this branch of the repository: %w", ErrConflict)
	}
	return translate(err)
}

// TouchClaim is the heartbeat of a long creation: it moves the claim's
// UpdatedAt to now, so that no other replica takes it over. ErrNotFound says
// the caller no longer holds the claim (the chat has no workspace being
// created by owner: it was taken over, or ended), and should stop.
func (s *Store) TouchClaim(ctx context.Context, chatID, owner string) error {
	res, err := s.db.ExecContext(ctx, queryTouchClaim, chatID, owner, now())
	if err != nil {
		return fmt.Errorf("store: touch claim of workspace %s: %w", chatID, translate(err))
	}
	return expectOne(res, fmt.Sprintf("touch claim of workspace %s by %s", chatID, owner))
}

// WorkspaceReady records that the chat's worktree exists, at path on branch
// (the claimed ones, or those the creation settled on), and clears Error. It
// is ErrNotFound for a chat without a workspace, and ErrConflict for one that
// failed or was removed meanwhile, or when another chat's live workspace
// holds path or branch.
func (s *Store) WorkspaceReady(ctx context.Context, chatID, path, branch string) error {
	if path == "" || branch == "" {
		return fmt.Errorf("store: workspace %s ready: path and branch are required", chatID)
	}
	res, err := s.db.ExecContext(ctx, queryWorkspaceReady, chatID, path, branch, now())
	if err != nil {
		return fmt.Errorf("store: workspace %s ready: %w", chatID, workspaceError(err))
	}
	return s.expectState(ctx, res, chatID, "ready")
}

// WorkspaceFailed records that the chat's worktree could not be created (or
// set up), errText saying why in plain words. It is ErrNotFound for a chat
// without a workspace and ErrConflict for one that is not being created.
func (s *Store) WorkspaceFailed(ctx context.Context, chatID, errText string) error {
	res, err := s.db.ExecContext(ctx, queryWorkspaceFailed, chatID, errText, now())
	if err != nil {
		return fmt.Errorf("store: workspace %s failed: %w", chatID, translate(err))
	}
	return s.expectState(ctx, res, chatID, "failed")
}

// expectState turns an update of no row into ErrNotFound (no workspace) or
// ErrConflict (a workspace in a state the update does not apply to).
func (s *Store) expectState(ctx context.Context, res sql.Result, chatID, what string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("store: workspace %s %s: %w", chatID, what, err)
	}
	if n > 0 {
		return nil
	}
	var state string
	if err := s.db.GetContext(ctx, &state, queryWorkspaceState, chatID); err != nil {
		return fmt.Errorf("store: workspace %s %s: %w", chatID, what, translate(err))
	}
	return fmt.Errorf("store: workspace %s %s: it is %s: %w", chatID, what, state, ErrConflict)
}

// Workspace returns the chat's workspace, whatever its state, or ErrNotFound.
func (s *Store) Workspace(ctx context.Context, chatID string) (Workspace, error) {
	var r workspaceRow
	if err := s.db.GetContext(ctx, &r, queryGetWorkspace, chatID); err != nil {
		return Workspace{}, fmt.Errorf("store: workspace of chat %s: %w", chatID, translate(err))
	}
	return r.workspace(), nil
}

// Workspaces returns the workspaces f selects, most recently used first.
func (s *Store) Workspaces(ctx context.Context, f WorkspaceFilter) ([]Workspace, error) {
	var (
		where []string
		args  []any
	)
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if f.Project != "" {
		where = append(where, "project = "+arg(f.Project))
	}
	if len(f.States) > 0 {
		in := make([]string, len(f.States))
		for i, st := range f.States {
			in[i] = arg(st)
		}
		where = append(where, "state IN ("+strings.Join(in, ", ")+")")
	}
	if !f.UsedBefore.IsZero() {
		where = append(where, "used_at < "+arg(f.UsedBefore.UTC()))
	}
	q := `SELECT ` + workspaceColumns + ` FROM workspaces`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY used_at DESC, chat_id`
	var rows []workspaceRow
	if err := s.db.SelectContext(ctx, &rows, q, args...); err != nil {
		return nil, fmt.Errorf("store: list workspaces: %w", translate(err))
	}
	out := make([]Workspace, len(rows))
	for i, r := range rows {
		out[i] = r.workspace()
	}
	return out, nil
}

// TouchWorkspace records that the chat used its worktree at at. UsedAt only
// moves forward, whichever replica touches it; a chat without a workspace is
// ErrNotFound.
func (s *Store) TouchWorkspace(ctx context.Context, chatID string, at time.Time) error {
	res, err := s.db.ExecContext(ctx, queryTouchWorkspace, chatID, at.UTC())
	if err != nil {
		return fmt.Errorf("store: touch workspace %s: %w", chatID, translate(err))
	}
	if n, err := res.RowsAffected(); err == nil && n > 0 {
		return nil
	}
	return s.workspaceExists(ctx, chatID, "touch workspace")
}

// workspaceExists is nil when the chat has a workspace, else ErrNotFound.
func (s *Store) workspaceExists(ctx context.Context, chatID, what string) error {
	var n int
	if err := s.db.GetContext(ctx, &n, queryWorkspaceExist, chatID); err != nil {
		return fmt.Errorf("store: %s %s: %w", what, chatID, translate(err))
	}
	if n == 0 {
		return fmt.Errorf("store: %s %s: %w", what, chatID, ErrNotFound)
	}
	return nil
}

// SetWorkspaceTurnTree records the snapshot tree of the chat's worktree at the
// start of the current turn, or returns ErrNotFound.
func (s *Store) SetWorkspaceTurnTree(ctx context.Context, chatID, tree string) error {
	res, err := s.db.ExecContext(ctx, queryWorkspaceTree, chatID, tree, now())
	if err != nil {
		return fmt.Errorf("store: set turn tree of workspace %s: %w", chatID, translate(err))
	}
	return expectOne(res, "set turn tree of workspace "+chatID)
}

// SetWorkspacePR records the chat's pull request (number 0 and url "": none),
// or returns ErrNotFound.
func (s *Store) SetWorkspacePR(ctx context.Context, chatID string, number int, url string) error {
	res, err := s.db.ExecContext(ctx, queryWorkspacePR, chatID, number, now(), url)
	if err != nil {
		return fmt.Errorf("store: set pull request of workspace %s: %w", chatID, translate(err))
	}
	return expectOne(res, "set pull request of workspace "+chatID)
}

// SetWorkspacePushed records the commit last pushed from the chat's branch,
// or returns ErrNotFound.
func (s *Store) SetWorkspacePushed(ctx context.Context, chatID, head string) error {
	res, err := s.db.ExecContext(ctx, queryWorkspacePushed, chatID, head, now())
	if err != nil {
		return fmt.Errorf("store: set pushed head of workspace %s: %w", chatID, translate(err))
	}
	return expectOne(res, "set pushed head of workspace "+chatID)
}

// RemoveWorkspace records that the chat's worktree is gone: the row stays,
// as history, but no longer holds its directory or branch, and a later
// ClaimWorkspace makes a new one. Removing a removed workspace is a no-op; a
// chat without a workspace is ErrNotFound.
func (s *Store) RemoveWorkspace(ctx context.Context, chatID string) error {
	res, err := s.db.ExecContext(ctx, queryRemoveWorkspace, chatID, now())
	if err != nil {
		return fmt.Errorf("store: remove workspace %s: %w", chatID, translate(err))
	}
	return expectOne(res, "remove workspace "+chatID)
}
