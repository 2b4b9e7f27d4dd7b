package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// TestCapabilities: capability rows keep the executable's mtime to the
// nanosecond (the cache key), replace on the same key, are read back newer
// than a time and pruned; a run's reported model and a chat's version notice
// are stored.
func TestCapabilities(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		mtime := time.Unix(1764590000, 123456789)
		old := time.Now().Add(-time.Hour)
		for _, c := range []store.Capability{
			{AgentID: "claude", Path: "/bin/claude", ModTime: mtime, Version: "2.1.0", Entry: []byte(`{"v":1}`), ProbedAt: old},
			{AgentID: "claude", Path: "/bin/claude", ModTime: mtime, Version: "2.1.0", Entry: []byte(`{"v":2}`)},
			{AgentID: "codex", Path: "/bin/codex", Version: "0.1", Entry: []byte(`{}`), ProbedAt: old},
		} {
			if err := s.SaveCapability(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.Capabilities(ctx, time.Now().Add(-time.Minute))
		if err != nil || len(got) != 1 {
			t.Fatalf("fresh capabilities = %+v %v", got, err)
		}
		if c := got[0]; c.AgentID != "claude" || c.Path != "/bin/claude" || !c.ModTime.Equal(mtime) || c.ModTime.Nanosecond() != 123456789 ||
			c.Version != "2.1.0" || string(c.Entry) != `{"v":2}` || time.Since(c.ProbedAt) > time.Minute {
			t.Fatalf("capability %+v", c)
		}
		all, _ := s.Capabilities(ctx, time.Time{})
		if len(all) != 2 || !all[1].ModTime.IsZero() {
			t.Fatalf("all capabilities %+v", all)
		}
		if n, err := s.PruneCapabilities(ctx, time.Now().Add(-time.Minute)); err != nil || n != 1 {
			t.Fatalf("prune = %d %v", n, err)
		}

		newChat(t, s, "c1")
		if err := s.StartRun(ctx, runhub.RunRecord{ID: "r1", ChatID: "c1", Agent: "claude", Model: "", StartedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if m, err := s.LastAgentModel(ctx, "c1"); err != nil || m != "" {
			t.Fatalf("LastAgentModel before = %q %v", m, err)
		}
		if err := s.SetAgentModel(ctx, "r1", "claude-opus-4-5"); err != nil {
			t.Fatal(err)
		}
		if err := s.SetAgentModel(ctx, "nope", "x"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("SetAgentModel(nope) = %v", err)
		}
		if r, err := s.GetRun(ctx, "r1"); err != nil || r.AgentModel != "claude-opus-4-5" || r.Model != "" {
			t.Fatalf("run %+v %v", r, err)
		}
		if m, _ := s.LastAgentModel(ctx, "c1"); m != "claude-opus-4-5" {
			t.Fatalf("LastAgentModel = %q", m)
		}

		for i, want := range []bool{true, false} {
			if first, err := s.NoticeVersion(ctx, "c1", "claude@9.9.9"); err != nil || first != want {
				t.Fatalf("NoticeVersion #%d = %v %v, want %v", i+1, first, err, want)
			}
		}
		if first, _ := s.NoticeVersion(ctx, "c1", "claude@10.0.0"); !first {
			t.Fatal("a new version was not noticed")
		}
	})
}
