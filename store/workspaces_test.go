package store_test

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

const stale = time.Minute

// newChats creates chats with these ids.
func newChats(t *testing.T, s *store.Store, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if err := s.CreateChat(t.Context(), &store.Chat{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
}

// plan is the worktree a claimant of chat would create.
func plan(chat, owner string) store.Workspace {
	return store.Workspace{ChatID: chat, Owner: owner, Project: "web", RepoDir: "/srv/clones/web",
		Path: "/srv/trees/" + chat, Branch: "threadline/" + chat, Base: "main", RequestedBy: "U1"}
}

// age moves the chat's workspace's updated_at (the claim's heartbeat) back.
func age(t *testing.T, s *store.Store, chat string, by time.Duration) {
	t.Helper()
	if _, err := s.DB().ExecContext(t.Context(), `UPDATE workspaces SET updated_at = $2 WHERE chat_id = $1`,
		chat, time.Now().UTC().Add(-by)); err != nil {
		t.Fatal(err)
	}
}

func claim(t *testing.T, s *store.Store, w store.Workspace) (store.Workspace, bool) {
	t.Helper()
	got, claimed, err := s.ClaimWorkspace(t.Context(), w, stale)
	if err != nil {
		t.Fatalf("ClaimWorkspace(%s by %s): %v", w.ChatID, w.Owner, err)
	}
	return got, claimed
}

func TestClaimWorkspace(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		newChats(t, s, "c1", "c2", "fork")

		t.Run("first claim creates", func(t *testing.T) {
			w := plan("c1", "hostA:1")
			got, claimed := claim(t, s, w)
			if !claimed {
				t.Fatal("first claim not claimed")
			}
			if got.State != store.WorkspaceStateCreating || got.Owner != "hostA:1" || got.Path != w.Path || got.Branch != w.Branch ||
				got.Base != "main" || got.RepoDir != w.RepoDir || got.Project != "web" || got.RequestedBy != "U1" || got.Error != "" {
				t.Errorf("claimed row = %+v", got)
			}
			if got.CreatedAt.IsZero() || !got.UpdatedAt.Equal(got.CreatedAt) || !got.UsedAt.Equal(got.CreatedAt) || got.CreatedAt.Location() != time.UTC {
				t.Errorf("times = %v %v %v", got.CreatedAt, got.UpdatedAt, got.UsedAt)
			}
			stored, err := s.Workspace(ctx, "c1")
			if err != nil || stored != got {
				t.Errorf("Workspace = %+v, %v; want %+v", stored, err, got)
			}
		})
		t.Run("a live claim is not taken", func(t *testing.T) {
			for _, owner := range []string{"hostB:2", "hostA:1"} {
				got, claimed := claim(t, s, plan("c1", owner))
				if claimed || got.Owner != "hostA:1" || got.State != store.WorkspaceStateCreating {
					t.Errorf("claim by %s = %+v, %v; want hostA's creating row", owner, got, claimed)
				}
			}
		})
		t.Run("heartbeat", func(t *testing.T) {
			age(t, s, "c1", time.Hour)
			if err := s.TouchClaim(ctx, "c1", "hostA:1"); err != nil {
				t.Fatal(err)
			}
			if _, claimed := claim(t, s, plan("c1", "hostB:2")); claimed {
				t.Error("a touched claim was taken over")
			}
			if err := s.TouchClaim(ctx, "c1", "hostB:2"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("TouchClaim by a non-owner = %v", err)
			}
		})
		t.Run("stale claim is taken over", func(t *testing.T) {
			age(t, s, "c1", 2*stale)
			other := plan("c1", "hostB:2")
			other.Path, other.Branch = "/elsewhere", "other"
			got, claimed := claim(t, s, other)
			if !claimed || got.Owner != "hostB:2" || got.State != store.WorkspaceStateCreating {
				t.Fatalf("takeover = %+v, %v", got, claimed)
			}
			// The dead owner's creation goes on: same directory and branch.
			if got.Path != "/srv/trees/c1" || got.Branch != "threadline/c1" {
				t.Errorf("takeover changed the plan: %+v", got)
			}
			if time.Since(got.UpdatedAt) > stale {
				t.Errorf("takeover left updated_at at %v", got.UpdatedAt)
			}
			if err := s.TouchClaim(ctx, "c1", "hostA:1"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("the old owner's heartbeat = %v, want ErrNotFound", err)
			}
			if err := s.TouchClaim(ctx, "c1", "hostB:2"); err != nil {
				t.Errorf("the new owner's heartbeat: %v", err)
			}
		})
		t.Run("ready", func(t *testing.T) {
			if err := s.WorkspaceReady(ctx, "c1", "/srv/trees/c1", "threadline/c1-2"); err != nil {
				t.Fatal(err)
			}
			got, claimed := claim(t, s, plan("c1", "hostC:3"))
			if claimed || got.State != store.WorkspaceStateReady || got.Branch != "threadline/c1-2" || got.Owner != "hostB:2" {
				t.Errorf("claim of a ready workspace = %+v, %v", got, claimed)
			}
			// Ready again (a restarted creator) is fine; a ready row is not stale.
			age(t, s, "c1", 2*stale)
			if err := s.WorkspaceReady(ctx, "c1", "/srv/trees/c1", "threadline/c1-2"); err != nil {
				t.Errorf("ready twice: %v", err)
			}
			age(t, s, "c1", 2*stale)
			if _, claimed := claim(t, s, plan("c1", "hostC:3")); claimed {
				t.Error("an old ready workspace was claimed")
			}
			if err := s.TouchClaim(ctx, "c1", "hostB:2"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("TouchClaim of a ready workspace = %v", err)
			}
			if err := s.WorkspaceFailed(ctx, "c1", "late"); !errors.Is(err, store.ErrConflict) {
				t.Errorf("WorkspaceFailed of a ready workspace = %v, want ErrConflict", err)
			}
		})
		t.Run("failed is claimed again", func(t *testing.T) {
			if _, claimed := claim(t, s, plan("c2", "hostA:1")); !claimed {
				t.Fatal("not claimed")
			}
			if err := s.WorkspaceFailed(ctx, "c2", "the base branch main does not exist"); err != nil {
				t.Fatal(err)
			}
			got, err := s.Workspace(ctx, "c2")
			if err != nil || got.State != store.WorkspaceStateFailed || got.Error != "the base branch main does not exist" {
				t.Fatalf("failed row = %+v, %v", got, err)
			}
			if err := s.WorkspaceReady(ctx, "c2", got.Path, got.Branch); !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "failed") {
				t.Errorf("WorkspaceReady of a failed workspace = %v, want ErrConflict", err)
			}
			retry := plan("c2", "hostB:2")
			retry.Base, retry.RequestedBy = "trunk", "U2"
			got, claimed := claim(t, s, retry)
			if !claimed || got.State != store.WorkspaceStateCreating || got.Owner != "hostB:2" || got.Error != "" || got.Base != "trunk" {
				t.Errorf("re-claim = %+v, %v", got, claimed)
			}
			if got.RequestedBy != "U1" {
				t.Errorf("requested_by = %q, want the first run's U1", got.RequestedBy)
			}
		})
		t.Run("removed is claimed again", func(t *testing.T) {
			if err := s.WorkspaceReady(ctx, "c2", "/srv/trees/c2", "threadline/c2"); err != nil {
				t.Fatal(err)
			}
			if err := s.SetWorkspacePR(ctx, "c2", 7, "https://git.example.org/web/pulls/7"); err != nil {
				t.Fatal(err)
			}
			if err := s.SetWorkspacePushed(ctx, "c2", "abc123"); err != nil {
				t.Fatal(err)
			}
			if err := s.SetWorkspaceTurnTree(ctx, "c2", "tree1"); err != nil {
				t.Fatal(err)
			}
			if err := s.RemoveWorkspace(ctx, "c2"); err != nil {
				t.Fatal(err)
			}
			removed, _ := s.Workspace(ctx, "c2")
			if err := s.RemoveWorkspace(ctx, "c2"); err != nil {
				t.Errorf("remove twice: %v", err)
			}
			if again, _ := s.Workspace(ctx, "c2"); again != removed || removed.State != store.WorkspaceStateRemoved {
				t.Errorf("second remove changed the row: %+v -> %+v", removed, again)
			}
			// Same repository and branch: the pull request and pushed head stay.
			got, claimed := claim(t, s, plan("c2", "hostA:1"))
			if !claimed || got.PRNumber != 7 || got.PRURL == "" || got.PushedHead != "abc123" || got.TurnTree != "" {
				t.Errorf("re-claim on the same branch = %+v, %v", got, claimed)
			}
			if err := s.RemoveWorkspace(ctx, "c2"); err != nil {
				t.Fatal(err)
			}
			// Another branch: they go.
			other := plan("c2", "hostA:1")
			other.Branch = "threadline/c2-new"
			got, claimed = claim(t, s, other)
			if !claimed || got.PRNumber != 0 || got.PRURL != "" || got.PushedHead != "" || got.Branch != "threadline/c2-new" {
				t.Errorf("re-claim on another branch = %+v, %v", got, claimed)
			}
		})
		t.Run("fork", func(t *testing.T) {
			w := plan("fork", "hostA:1")
			w.ForkedFrom = "c1"
			if got, claimed := claim(t, s, w); !claimed || got.ForkedFrom != "c1" {
				t.Errorf("fork claim = %+v, %v", got, claimed)
			}
		})
		t.Run("errors", func(t *testing.T) {
			if _, _, err := s.ClaimWorkspace(ctx, plan("nochat", "hostA:1"), stale); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("claim for a missing chat = %v, want ErrNotFound", err)
			}
			for name, w := range map[string]store.Workspace{
				"no owner":  {ChatID: "c1", RepoDir: "/r", Path: "/p", Branch: "b"},
				"no chat":   {Owner: "o", RepoDir: "/r", Path: "/p", Branch: "b"},
				"no repo":   {ChatID: "c1", Owner: "o", Path: "/p", Branch: "b"},
				"no path":   {ChatID: "c1", Owner: "o", RepoDir: "/r", Branch: "b"},
				"no branch": {ChatID: "c1", Owner: "o", RepoDir: "/r", Path: "/p"},
			} {
				if _, _, err := s.ClaimWorkspace(ctx, w, stale); err == nil {
					t.Errorf("%s: accepted", name)
				}
			}
			if _, _, err := s.ClaimWorkspace(ctx, plan("c1", "o"), 0); err == nil {
				t.Error("staleAfter 0 accepted")
			}
			if _, err := s.Workspace(ctx, "nochat"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Workspace(nochat) = %v", err)
			}
			for name, err := range map[string]error{
				"ready":    s.WorkspaceReady(ctx, "nochat", "/p", "b"),
				"failed":   s.WorkspaceFailed(ctx, "nochat", "x"),
				"touch":    s.TouchWorkspace(ctx, "nochat", time.Now()),
				"claim":    s.TouchClaim(ctx, "nochat", "o"),
				"tree":     s.SetWorkspaceTurnTree(ctx, "nochat", "t"),
				"pr":       s.SetWorkspacePR(ctx, "nochat", 1, "u"),
				"pushed":   s.SetWorkspacePushed(ctx, "nochat", "h"),
				"removed":  s.RemoveWorkspace(ctx, "nochat"),
				"no path":  s.WorkspaceReady(ctx, "c1", "", "b"),
				"no brnch": s.WorkspaceReady(ctx, "c1", "/p", ""),
			} {
				if strings.HasPrefix(name, "no ") {
					if err == nil {
						t.Errorf("%s: accepted", name)
					}
					continue
				}
				if !errors.Is(err, store.ErrNotFound) {
					t.Errorf("%s of a missing workspace = %v, want ErrNotFound", name, err)
				}
			}
		})
		t.Run("deleted with its chat", func(t *testing.T) {
			if err := s.DeleteChat(ctx, "fork"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Workspace(ctx, "fork"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("workspace of a deleted chat = %v", err)
			}
		})
	})
}

// TestClaimWorkspaceConcurrent: of many claimants at once, one creates.
func TestClaimWorkspaceConcurrent(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		const n = 24
		newChats(t, s, "race")
		race := func(t *testing.T, sameOwner bool) store.Workspace {
			t.Helper()
			var (
				wg      sync.WaitGroup
				start   = make(chan struct{})
				mu      sync.Mutex
				winners []string
				rows    []store.Workspace
				errs    []error
			)
			for i := range n {
				wg.Go(func() {
					owner := fmt.Sprintf("host%d:%d", i, i)
					if sameOwner {
						owner = "host:1"
					}
					<-start
					got, claimed, err := s.ClaimWorkspace(t.Context(), plan("race", owner), stale)
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						errs = append(errs, err)
						return
					}
					if claimed {
						winners = append(winners, owner)
					}
					rows = append(rows, got)
				})
			}
			close(start)
			wg.Wait()
			if len(errs) > 0 {
				t.Fatalf("%d claims failed, first: %v", len(errs), errs[0])
			}
			if len(winners) != 1 {
				t.Fatalf("%d claims won (%v), want 1", len(winners), winners)
			}
			for _, r := range rows {
				if r.Owner != rows[0].Owner || r.State != store.WorkspaceStateCreating {
					t.Fatalf("claimants saw different rows: %+v vs %+v", r, rows[0])
				}
			}
			if !sameOwner && rows[0].Owner != winners[0] {
				t.Errorf("owner %s, winner %s", rows[0].Owner, winners[0])
			}
			return rows[0]
		}
		t.Run("insert", func(t *testing.T) { race(t, false) })
		t.Run("stale takeover", func(t *testing.T) {
			age(t, s, "race", 2*stale)
			race(t, false)
		})
		t.Run("failed re-claim", func(t *testing.T) {
			if err := s.WorkspaceFailed(t.Context(), "race", "boom"); err != nil {
				t.Fatal(err)
			}
			race(t, false)
		})
		t.Run("one owner's goroutines", func(t *testing.T) {
			if err := s.RemoveWorkspace(t.Context(), "race"); err != nil {
				t.Fatal(err)
			}
			race(t, true)
		})
	})
}

func TestWorkspaceUniqueness(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		newChats(t, s, "a", "b", "c")
		a := plan("a", "h:1")
		claim(t, s, a)

		samePath := plan("b", "h:1")
		samePath.Path = a.Path
		if _, _, err := s.ClaimWorkspace(ctx, samePath, stale); !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "directory") {
			t.Errorf("a live path twice: %v, want ErrConflict about the directory", err)
		}
		sameBranch := plan("b", "h:1")
		sameBranch.Branch = a.Branch
		if _, _, err := s.ClaimWorkspace(ctx, sameBranch, stale); !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "branch") {
			t.Errorf("a live branch twice: %v, want ErrConflict about the branch", err)
		}
		if _, err := s.Workspace(ctx, "b"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a refused claim left a row: %v", err)
		}
		// The same branch name in another repository is another branch.
		otherRepo := sameBranch
		otherRepo.RepoDir = "/srv/clones/api"
		if _, claimed := claim(t, s, otherRepo); !claimed {
			t.Error("the same branch of another repository was refused")
		}

		// Ready may not move onto another chat's directory or branch.
		claim(t, s, plan("c", "h:1"))
		if err := s.WorkspaceReady(ctx, "c", a.Path, "threadline/c"); !errors.Is(err, store.ErrConflict) {
			t.Errorf("ready onto a's path: %v", err)
		}
		if err := s.WorkspaceReady(ctx, "c", "/srv/trees/c", a.Branch); !errors.Is(err, store.ErrConflict) {
			t.Errorf("ready onto a's branch: %v", err)
		}

		// A failed workspace still holds its directory; a removed one does not.
		if err := s.WorkspaceFailed(ctx, "a", "no"); err != nil {
			t.Fatal(err)
		}
		if err := s.RemoveWorkspace(ctx, "c"); err != nil {
			t.Fatal(err)
		}
		samePath.ChatID = "c"
		if _, _, err := s.ClaimWorkspace(ctx, samePath, stale); !errors.Is(err, store.ErrConflict) {
			t.Errorf("the path of a failed workspace: %v", err)
		}
		if err := s.RemoveWorkspace(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		if got, claimed := claim(t, s, samePath); !claimed || got.Path != a.Path {
			t.Errorf("the path of a removed workspace: %+v, %v", got, claimed)
		}
		sameBranch.ChatID, sameBranch.Path = "a", "/srv/trees/a2"
		if _, _, err := s.ClaimWorkspace(ctx, sameBranch, stale); err != nil {
			t.Errorf("the branch of a removed workspace: %v", err)
		}
	})
}

func TestWorkspaceFields(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		newChats(t, s, "c")
		w, _ := claim(t, s, plan("c", "h:1"))

		// While creating, the setters leave the claim's heartbeat alone.
		if err := s.SetWorkspaceTurnTree(ctx, "c", "t0"); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Workspace(ctx, "c"); got.TurnTree != "t0" || !got.UpdatedAt.Equal(w.UpdatedAt) {
			t.Errorf("turn tree while creating: %+v (updated %v, was %v)", got, got.UpdatedAt, w.UpdatedAt)
		}
		if err := s.WorkspaceReady(ctx, "c", w.Path, w.Branch); err != nil {
			t.Fatal(err)
		}
		ready, _ := s.Workspace(ctx, "c")

		if err := s.SetWorkspacePR(ctx, "c", 42, "https://github.com/o/r/pull/42"); err != nil {
			t.Fatal(err)
		}
		if err := s.SetWorkspacePushed(ctx, "c", "0123456789abcdef"); err != nil {
			t.Fatal(err)
		}
		if err := s.SetWorkspaceTurnTree(ctx, "c", "t1"); err != nil {
			t.Fatal(err)
		}
		got, err := s.Workspace(ctx, "c")
		if err != nil {
			t.Fatal(err)
		}
		if got.PRNumber != 42 || got.PRURL != "https://github.com/o/r/pull/42" || got.PushedHead != "0123456789abcdef" || got.TurnTree != "t1" {
			t.Errorf("fields = %+v", got)
		}
		if got.UpdatedAt.Before(ready.UpdatedAt) || !got.UsedAt.Equal(ready.UsedAt) || !got.CreatedAt.Equal(w.CreatedAt) {
			t.Errorf("times: %+v after ready %+v", got, ready)
		}
		if err := s.SetWorkspacePR(ctx, "c", 0, ""); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Workspace(ctx, "c"); got.PRNumber != 0 || got.PRURL != "" {
			t.Errorf("PR cleared: %+v", got)
		}

		// UsedAt only moves forward.
		later := time.Now().UTC().Add(time.Hour).Truncate(time.Millisecond)
		if err := s.TouchWorkspace(ctx, "c", later); err != nil {
			t.Fatal(err)
		}
		if err := s.TouchWorkspace(ctx, "c", later.Add(-2*time.Hour)); err != nil {
			t.Errorf("an older touch: %v", err)
		}
		if got, _ := s.Workspace(ctx, "c"); !got.UsedAt.Equal(later) {
			t.Errorf("UsedAt = %v, want %v", got.UsedAt, later)
		}
	})
}

func TestWorkspacesFilter(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		base := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
		for i, c := range []struct{ id, project, state string }{
			{"w1", "web", store.WorkspaceStateReady},
			{"w2", "web", store.WorkspaceStateRemoved},
			{"w3", "web", store.WorkspaceStateFailed},
			{"a1", "api", store.WorkspaceStateReady},
			{"l1", "", store.WorkspaceStateCreating},
		} {
			newChats(t, s, c.id)
			w := plan(c.id, "h:1")
			w.Project = c.project
			claim(t, s, w)
			switch c.state {
			case store.WorkspaceStateReady:
				err := s.WorkspaceReady(ctx, c.id, w.Path, w.Branch)
				if err != nil {
					t.Fatal(err)
				}
			case store.WorkspaceStateRemoved:
				if err := s.RemoveWorkspace(ctx, c.id); err != nil {
					t.Fatal(err)
				}
			case store.WorkspaceStateFailed:
				if err := s.WorkspaceFailed(ctx, c.id, "x"); err != nil {
					t.Fatal(err)
				}
			}
			// w1 used last, l1 first.
			if err := s.TouchWorkspace(ctx, c.id, base.Add(-time.Duration(i)*time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
		ids := func(f store.WorkspaceFilter) []string {
			t.Helper()
			ws, err := s.Workspaces(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, w := range ws {
				out = append(out, w.ChatID)
			}
			return out
		}
		for _, c := range []struct {
			name string
			f    store.WorkspaceFilter
			want []string
		}{
			{"all", store.WorkspaceFilter{}, []string{"w1", "w2", "w3", "a1", "l1"}},
			{"project", store.WorkspaceFilter{Project: "web"}, []string{"w1", "w2", "w3"}},
			{"states", store.WorkspaceFilter{States: []string{store.WorkspaceStateReady, store.WorkspaceStateFailed}}, []string{"w1", "w3", "a1"}},
			{"one state", store.WorkspaceFilter{States: []string{store.WorkspaceStateCreating}}, []string{"l1"}},
			{"used before", store.WorkspaceFilter{UsedBefore: base.Add(-90 * time.Minute)}, []string{"w3", "a1", "l1"}},
			{"all three", store.WorkspaceFilter{Project: "web", States: []string{store.WorkspaceStateReady, store.WorkspaceStateFailed},
				UsedBefore: base.Add(-30 * time.Minute)}, []string{"w3"}},
			{"none", store.WorkspaceFilter{Project: "nope"}, nil},
		} {
			if got := ids(c.f); !slices.Equal(got, c.want) {
				t.Errorf("%s: %v, want %v", c.name, got, c.want)
			}
		}
	})
}

// TestWorkspacesMigrationDown: 0012 goes down (projects as they were, no
// workspaces) and up again, keeping the projects; it refuses to go down
// while two projects have no container, changing nothing.
func TestWorkspacesMigrationDown(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(d, func(t *testing.T) {
			s := storetest.Open(t, d)
			ctx := t.Context()
			dialect := goose.DialectPostgres
			if d == store.DialectSQLite {
				dialect = goose.DialectSQLite3
			}
			p, err := goose.NewProvider(dialect, s.DB().DB, os.DirFS("migrations/"+d),
				goose.WithDisableGlobalRegistry(true), goose.WithAllowOutofOrder(true))
			if err != nil {
				t.Fatal(err)
			}
			newChats(t, s, "c")
			claim(t, s, plan("c", "h:1"))
			for _, pr := range []store.Project{{Name: "ct", Container: "ct-c", Repo: "/srv/ct"}, {Name: "h1"}, {Name: "h2"}} {
				if err := s.CreateProject(ctx, &pr); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := p.DownTo(ctx, 11); err == nil {
				t.Fatal("down with two host projects succeeded")
			}
			if v, err := p.GetDBVersion(ctx); err != nil || v != 12 {
				t.Fatalf("version after the refused down = %d, %v", v, err)
			}
			if _, err := s.Workspace(ctx, "c"); err != nil {
				t.Fatalf("workspaces after the refused down: %v", err)
			}

			if err := s.DeleteProject(ctx, "h2"); err != nil {
				t.Fatal(err)
			}
			if _, err := p.DownTo(ctx, 11); err != nil {
				t.Fatalf("down: %v", err)
			}
			if _, err := s.DB().ExecContext(ctx, `SELECT COUNT(*) FROM workspaces`); err == nil {
				t.Error("workspaces survived the down")
			}
			if _, err := s.DB().ExecContext(ctx, `SELECT repo FROM projects`); err == nil {
				t.Error("projects.repo survived the down")
			}
			// The old index is back: a second empty container conflicts.
			if _, err := s.DB().ExecContext(ctx, `INSERT INTO projects (name, container, created_at, updated_at) VALUES ('h3', '', $1, $1)`,
				time.Now().UTC()); err == nil {
				t.Error("the down left container '' shareable")
			}

			if err := s.Migrate(ctx); err != nil {
				t.Fatalf("up again: %v", err)
			}
			list, err := s.ListProjects(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != 2 || list[0].Name != "ct" || list[0].Container != "ct-c" || list[0].Repo != "" || list[1].Name != "h1" {
				t.Errorf("projects after down and up = %+v", list)
			}
			if err := s.CreateProject(ctx, &store.Project{Name: "h2"}); err != nil {
				t.Errorf("a second host project after up again: %v", err)
			}
			if _, claimed := claim(t, s, plan("c", "h:1")); !claimed {
				t.Error("no fresh claim after up again")
			}
		})
	}
}
