package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

func newChat(t *testing.T, s *store.Store, id string) store.Chat {
	t.Helper()
	c := store.Chat{ID: id, Title: "t " + id, Agent: "claude", Model: "opus", Cwd: "/tmp"}
	if err := s.CreateChat(t.Context(), &c); err != nil {
		t.Fatalf("CreateChat(%s): %v", id, err)
	}
	return c
}

func TestMigrateTwice(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		for i := range 2 {
			if err := s.Migrate(t.Context()); err != nil {
				t.Fatalf("Migrate #%d: %v", i+2, err)
			}
		}
		newChat(t, s, "c1")
	})
}

func TestChats(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		c := newChat(t, s, "c1")
		if c.CreatedAt.IsZero() || !c.CreatedAt.Equal(c.UpdatedAt) {
			t.Fatalf("timestamps not set: %+v", c)
		}
		t.Run("get", func(t *testing.T) {
			got, err := s.GetChat(ctx, "c1")
			if err != nil {
				t.Fatal(err)
			}
			if got.Title != c.Title || got.Agent != "claude" || got.Model != "opus" || got.Cwd != "/tmp" || len(got.Sessions) != 0 {
				t.Fatalf("GetChat = %+v", got)
			}
			if d := got.CreatedAt.Sub(c.CreatedAt).Abs(); d > time.Millisecond {
				t.Fatalf("created_at round trip off by %v", d)
			}
		})
		t.Run("not found", func(t *testing.T) {
			if _, err := s.GetChat(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("GetChat(nope) = %v, want ErrNotFound", err)
			}
			if err := s.UpdateChat(ctx, store.Chat{ID: "nope"}); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("UpdateChat(nope) = %v, want ErrNotFound", err)
			}
			if err := s.SetSession(ctx, "nope", "claude", "x"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("SetSession(nope) = %v, want ErrNotFound", err)
			}
		})
		t.Run("duplicate", func(t *testing.T) {
			dup := store.Chat{ID: "c1"}
			if err := s.CreateChat(ctx, &dup); !errors.Is(err, store.ErrConflict) {
				t.Fatalf("CreateChat(dup) = %v, want ErrConflict", err)
			}
		})
		t.Run("update", func(t *testing.T) {
			u := c
			u.Model, u.Effort, u.Mode, u.Project, u.ForkPending = "sonnet", "high", "plan", "p1", true
			if err := s.UpdateChat(ctx, u); err != nil {
				t.Fatal(err)
			}
			got, err := s.GetChat(ctx, "c1")
			if err != nil {
				t.Fatal(err)
			}
			if got.Model != "sonnet" || got.Effort != "high" || got.Mode != "plan" || got.Project != "p1" || !got.ForkPending {
				t.Fatalf("after UpdateChat: %+v", got)
			}
		})
		t.Run("sessions", func(t *testing.T) {
			steps := []struct {
				provider, session string
				want              map[string]string
			}{
				{"claude", "s-1", map[string]string{"claude": "s-1"}},
				{"codex", "th-9", map[string]string{"claude": "s-1", "codex": "th-9"}},
				{"claude", "s-2", map[string]string{"claude": "s-2", "codex": "th-9"}},
				{"claude", "", map[string]string{"codex": "th-9"}},
			}
			for _, st := range steps {
				if err := s.SetSession(ctx, "c1", st.provider, st.session); err != nil {
					t.Fatal(err)
				}
				got, err := s.GetChat(ctx, "c1")
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(got.Sessions) != fmt.Sprint(st.want) {
					t.Fatalf("SetSession(%s,%q): sessions = %v, want %v", st.provider, st.session, got.Sessions, st.want)
				}
				if got.ForkPending {
					t.Fatalf("SetSession did not clear fork_pending")
				}
			}
		})
		t.Run("delete", func(t *testing.T) {
			newChat(t, s, "gone")
			if err := s.AppendEvents(ctx, events("gone", 1, 3)); err != nil {
				t.Fatal(err)
			}
			if err := s.StartRun(ctx, store.RunRecord{ID: "gone-r", ChatID: "gone"}); err != nil {
				t.Fatal(err)
			}
			if err := s.DeleteChat(ctx, "gone"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.GetChat(ctx, "gone"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("GetChat after delete = %v", err)
			}
			if _, err := s.GetRun(ctx, "gone-r"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("GetRun after delete = %v", err)
			}
			if seq, _ := s.LastSeq(ctx, "gone"); seq != 0 {
				t.Fatalf("events survive DeleteChat: last seq %d", seq)
			}
			if err := s.DeleteChat(ctx, "gone"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("second DeleteChat = %v", err)
			}
		})
		t.Run("list", func(t *testing.T) {
			newChat(t, s, "c2")
			got, err := s.ListChats(ctx, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 {
				t.Fatalf("ListChats = %d chats, want 2", len(got))
			}
			if got, _ := s.ListChats(ctx, 1); len(got) != 1 {
				t.Fatalf("ListChats(1) = %d chats", len(got))
			}
		})
	})
}

func TestRuns(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		newChat(t, s, "c1")
		newChat(t, s, "c2")
		start := func(id agent.RunID, chat agent.ChatID, owner string) error {
			return s.StartRun(ctx, store.RunRecord{ID: id, ChatID: chat, Agent: "claude", Owner: owner, StartedBy: "u1"})
		}
		if err := start("r1", "c1", "a"); err != nil {
			t.Fatal(err)
		}
		err := start("r2", "c1", "b")
		if !errors.Is(err, agent.ErrPromptAlreadyRunning) || !errors.Is(err, store.ErrRunActive) {
			t.Fatalf("second StartRun = %v, want ErrRunActive/ErrPromptAlreadyRunning", err)
		}
		if err := start("r1", "c2", "a"); !errors.Is(err, store.ErrConflict) || errors.Is(err, agent.ErrPromptAlreadyRunning) {
			t.Fatalf("StartRun(dup id) = %v, want ErrConflict", err)
		}
		if err := start("r9", "nochat", "a"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("StartRun(no chat) = %v, want ErrNotFound", err)
		}
		if err := start("r3", "c2", "a"); err != nil {
			t.Fatalf("other chat: %v", err)
		}
		usage := json.RawMessage(`{"input_tokens":12}`)
		if err := s.FinishRun(ctx, "r1", runhub.StatusCompleted, usage, ""); err != nil {
			t.Fatal(err)
		}
		if err := s.FinishRun(ctx, "r1", runhub.StatusFailed, nil, "late"); err != nil {
			t.Fatalf("second FinishRun: %v", err)
		}
		if err := s.FinishRun(ctx, "nope", runhub.StatusFailed, nil, ""); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("FinishRun(nope) = %v", err)
		}
		if err := s.FinishRun(ctx, "r3", "bogus", nil, ""); err == nil {
			t.Fatal("FinishRun(bogus status) succeeded")
		}
		r, err := s.GetRun(ctx, "r1")
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != runhub.StatusCompleted || string(r.Usage) != string(usage) || r.EndedAt.IsZero() || r.StartedBy != "u1" {
			t.Fatalf("GetRun = %+v", r)
		}
		if _, err := s.GetRun(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("GetRun(nope) = %v", err)
		}
		// A finished run frees the chat.
		if err := start("r2", "c1", "b"); err != nil {
			t.Fatalf("StartRun after finish: %v", err)
		}
		runs, err := s.ListRuns(ctx, "c1")
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 2 || runs[0].ID != "r1" || runs[1].ID != "r2" || runs[1].Status != runhub.StatusRunning {
			t.Fatalf("ListRuns = %+v", runs)
		}
		// Stale runs: r3 (owner a) never heartbeated since its start; r2 (owner b) does.
		cut := time.Now()
		time.Sleep(10 * time.Millisecond)
		if n, err := s.HeartbeatRuns(ctx, "b"); err != nil || n != 1 {
			t.Fatalf("HeartbeatRuns = %d, %v", n, err)
		}
		if rs, err := s.MarkStaleRunsInterrupted(ctx, cut); err != nil || len(rs) != 1 || rs[0].ID != "r3" || rs[0].Status != runhub.StatusInterrupted {
			t.Fatalf("MarkStaleRunsInterrupted(cut) = %+v, %v", rs, err)
		}
		if r, _ := s.GetRun(ctx, "r2"); r.Status != runhub.StatusRunning {
			t.Fatalf("r2, heartbeating, touched: %+v", r)
		}
		if rs, err := s.MarkStaleRunsInterrupted(ctx, time.Now().Add(time.Second), "r2", "r-other"); err != nil || len(rs) != 0 {
			t.Fatalf("MarkStaleRunsInterrupted(later, keep r2) = %+v, %v", rs, err)
		}
		if rs, err := s.MarkStaleRunsInterrupted(ctx, time.Now().Add(time.Second)); err != nil || len(rs) != 1 || rs[0].ID != "r2" {
			t.Fatalf("MarkStaleRunsInterrupted(later) = %+v, %v", rs, err)
		}
		for _, id := range []string{"r2", "r3"} {
			if r, _ := s.GetRun(ctx, id); r.Status != runhub.StatusInterrupted || r.Error == "" {
				t.Fatalf("%s after stale: %+v", id, r)
			}
		}
	})
}

func events(chat agent.ChatID, from, to int64) []store.Event {
	var out []store.Event
	for seq := from; seq <= to; seq++ {
		out = append(out, store.Event{ChatID: chat, Seq: seq, RunID: "r1", Type: "text",
			Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, seq))})
	}
	return out
}

func TestEvents(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		newChat(t, s, "c1")
		newChat(t, s, "c2")
		if seq, err := s.LastSeq(ctx, "c1"); err != nil || seq != 0 {
			t.Fatalf("LastSeq(empty) = %d, %v", seq, err)
		}
		if err := s.AppendEvents(ctx, events("c1", 1, 10)); err != nil {
			t.Fatal(err)
		}
		noRun := store.Event{ChatID: "c2", Seq: 1, Type: "system"}
		if err := s.AppendEvents(ctx, []store.Event{noRun}); err != nil {
			t.Fatal(err)
		}

		t.Run("conflict writes nothing", func(t *testing.T) {
			for _, batch := range [][]store.Event{
				append(events("c1", 11, 12), events("c1", 10, 10)...), // existing seq
				append(events("c1", 11, 12), events("c1", 12, 12)...), // duplicate inside the batch
				append(events("c1", 11, 1500), events("c1", 5, 5)...), // multi-chunk transaction
			} {
				err := s.AppendEvents(ctx, batch)
				if !errors.Is(err, store.ErrConflict) {
					t.Fatalf("AppendEvents(dup) = %v, want ErrConflict", err)
				}
				if seq, _ := s.LastSeq(ctx, "c1"); seq != 10 {
					t.Fatalf("LastSeq after failed batch = %d, want 10", seq)
				}
			}
		})
		t.Run("large batch", func(t *testing.T) {
			if err := s.AppendEvents(ctx, events("c1", 11, 2500)); err != nil {
				t.Fatal(err)
			}
			if seq, _ := s.LastSeq(ctx, "c1"); seq != 2500 {
				t.Fatalf("LastSeq = %d, want 2500", seq)
			}
		})
		t.Run("paging", func(t *testing.T) {
			var got []store.Event
			after := int64(0)
			for {
				page, err := s.EventsAfter(ctx, "c1", after, 700)
				if err != nil {
					t.Fatal(err)
				}
				if len(page) == 0 {
					break
				}
				got = append(got, page...)
				after = page[len(page)-1].Seq
			}
			if len(got) != 2500 {
				t.Fatalf("paged %d events, want 2500", len(got))
			}
			for i, e := range got {
				if e.Seq != int64(i+1) || e.ChatID != "c1" || e.RunID != "r1" || e.Type != "text" || e.At.IsZero() {
					t.Fatalf("event %d = %+v", i, e)
				}
				if want := fmt.Sprintf(`{"n":%d}`, e.Seq); string(e.Payload) != want {
					t.Fatalf("payload %d = %s, want %s", i, e.Payload, want)
				}
			}
			c2, err := s.EventsAfter(ctx, "c2", 0, 10)
			if err != nil || len(c2) != 1 || c2[0].RunID != "" || c2[0].Payload != nil {
				t.Fatalf("EventsAfter(c2) = %+v, %v", c2, err)
			}
			if tail, _ := s.EventsAfter(ctx, "c1", 2498, 10); len(tail) != 2 || tail[0].Seq != 2499 {
				t.Fatalf("tail = %+v", tail)
			}
		})
	})
}

func TestOpenErrors(t *testing.T) {
	tests := []struct {
		name, url string
		want      []string
		notWant   string
	}{
		{"postgres refused", "postgres://nobody:s3cret@127.0.0.1:1/x?sslmode=disable&connect_timeout=2",
			[]string{"postgres", "127.0.0.1:1"}, "s3cret"},
		{"postgresql scheme", "postgresql://nobody:s3cret@127.0.0.1:1/x?sslmode=disable&connect_timeout=2",
			[]string{"postgres", "127.0.0.1:1"}, "s3cret"},
		{"sqlite in a file", "sqlite:/dev/null/x/db.sqlite", []string{"sqlite", "/dev/null/x/db.sqlite"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			s, err := store.Open(ctx, tt.url, nil)
			if err == nil {
				_ = s.Close()
				t.Fatal("Open succeeded")
			}
			t.Logf("Open error: %v", err)
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
			if tt.notWant != "" && strings.Contains(err.Error(), tt.notWant) {
				t.Errorf("error %q leaks %q", err, tt.notWant)
			}
		})
	}
}

func TestOpenSQLiteForms(t *testing.T) {
	dir := t.TempDir()
	for _, u := range []string{"sqlite:" + dir + "/a/one.db", "file:" + dir + "/b/two.db", dir + "/c/three.db"} {
		t.Run(u, func(t *testing.T) {
			s, err := store.OpenAndMigrate(t.Context(), u, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if s.Dialect() != store.DialectSQLite {
				t.Fatalf("Dialect = %s", s.Dialect())
			}
			newChat(t, s, "c")
		})
	}
}

// TestSQLiteFileModes: under umask 0000 the database, its -wal and -shm are
// 0600 and the directories created for it 0700, after writes too; a
// database of an older install (0644) is tightened when opened.
func TestSQLiteFileModes(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := t.TempDir()
	path := filepath.Join(dir, "data", "threadline", "threadline.db")
	check := func(t *testing.T) {
		t.Helper()
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			fi, err := os.Stat(p)
			if err != nil {
				t.Errorf("%s: %v", p, err)
			} else if fi.Mode().Perm() != 0o600 {
				t.Errorf("%s: mode %o, want 600", p, fi.Mode().Perm())
			}
		}
		for _, d := range []string{filepath.Join(dir, "data"), filepath.Dir(path)} {
			if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
				t.Errorf("%s: %v %v, want mode 700", d, fi.Mode(), err)
			}
		}
	}
	s, err := store.OpenAndMigrate(t.Context(), "sqlite:"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		newChat(t, s, fmt.Sprintf("c%d", i))
	}
	check(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	t.Run("older install tightened", func(t *testing.T) {
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			if err := os.Chmod(p, 0o644); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
		}
		s, err := store.OpenAndMigrate(t.Context(), path, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		newChat(t, s, "after")
		check(t)
	})

	t.Run("existing directory left alone", func(t *testing.T) {
		shared := filepath.Join(dir, "shared")
		if err := os.Mkdir(shared, 0o755); err != nil {
			t.Fatal(err)
		}
		s, err := store.OpenAndMigrate(t.Context(), filepath.Join(shared, "t.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if fi, _ := os.Stat(shared); fi.Mode().Perm() != 0o755 {
			t.Errorf("shared dir mode %o, want 755 untouched", fi.Mode().Perm())
		}
		if fi, _ := os.Stat(filepath.Join(shared, "t.db")); fi.Mode().Perm() != 0o600 {
			t.Errorf("db mode %o", fi.Mode().Perm())
		}
	})
}
