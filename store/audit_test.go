package store_test

import (
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

func TestAudit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		newChat(t, s, "c1")
		newChat(t, s, "c2")
		t0 := time.Now().Add(-time.Minute)
		s.StartRun(ctx, store.RunRecord{ID: "old", ChatID: "c1", Agent: "claude", StartedBy: "slack:U0", StartedAt: t0.Add(-time.Hour)})
		s.FinishRun(ctx, "old", runhub.StatusCompleted, nil, "")
		s.StartRun(ctx, store.RunRecord{ID: "r1", ChatID: "c1", Agent: "claude", StartedBy: "slack:U1"})
		s.CreateInteraction(ctx, store.Interaction{RunID: "r1", ID: "i1", ChatID: "c1", NativeID: []byte(`1`), Kind: "command_approval"})
		s.ResolveInteraction(ctx, "r1", "i1", store.InteractionApproved, "approve", "slack:U2")
		s.FinishRun(ctx, "r1", runhub.StatusFailed, nil, "boom")
		s.StartRun(ctx, store.RunRecord{ID: "r2", ChatID: "c2", Agent: "codex", StartedBy: "matrix:@b:x"})
		if err := s.AppendEvents(ctx, []store.Event{
			{ChatID: "c1", Seq: 1, RunID: "r1", Type: "system", Payload: []byte(`{"type":"system","subtype":"file_sent","text":"Sent chart.png to the thread (2 KB, sha256 ab12)"}`)},
			{ChatID: "c1", Seq: 2, RunID: "r1", Type: "system", Payload: []byte(`{"type":"system","subtype":"file_refused","text":"Not sent: .env (holds a configured secret)"}`)},
			{ChatID: "c1", Seq: 3, RunID: "r1", Type: "system", Payload: []byte(`{"type":"system","subtype":"api_retry","text":"retrying"}`)},
		}); err != nil {
			t.Fatal(err)
		}

		all, err := s.Audit(ctx, "", t0)
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, e := range all {
			lines = append(lines, e.ChatID+" "+e.Action+" "+e.By+" "+e.Detail)
		}
		got := strings.Join(lines, "\n")
		for _, w := range []string{"c1 run.started slack:U1", "c1 interaction.approved slack:U2", "c1 run.failed ", "c2 run.started matrix:@b:x",
			"c1 file.sent agent Sent chart.png to the thread (2 KB, sha256 ab12)", "c1 file.refused agent Not sent: .env (holds a configured secret)"} {
			if !strings.Contains(got, w) {
				t.Errorf("audit lacks %q:\n%s", w, got)
			}
		}
		if strings.Contains(got, "slack:U0") || strings.Contains(got, "retrying") {
			t.Errorf("an action before --since is listed:\n%s", got)
		}
		one, _ := s.Audit(ctx, "c2", t0)
		if len(one) != 1 || one[0].RunID != "r2" {
			t.Errorf("chat filter: %+v", one)
		}
		for i := 1; i < len(all); i++ {
			if all[i].At.Before(all[i-1].At) {
				t.Errorf("not in time order: %+v", all)
			}
		}
	})
}
