package store_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

func TestThreadBindings(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		newChat(t, s, "c1")
		newChat(t, s, "c2")
		p := store.ThreadRef{Platform: "slack", Workspace: "T1", Channel: "C1", Thread: "1700000000.000100"}
		if _, ok, err := s.Binding(ctx, p); err != nil || ok {
			t.Fatalf("Binding before Bind = %v %v", ok, err)
		}
		b, created, err := s.Bind(ctx, store.Binding{ThreadRef: p, ChatID: "c1", CreatedBy: "slack:U1"})
		if err != nil || !created || b.ChatID != "c1" || b.CreatedAt.IsZero() {
			t.Fatalf("Bind = %+v %v %v", b, created, err)
		}
		// A second bind of the same thread keeps the first chat.
		b, created, err = s.Bind(ctx, store.Binding{ThreadRef: p, ChatID: "c2"})
		if err != nil || created || b.ChatID != "c1" || b.CreatedBy != "slack:U1" {
			t.Fatalf("second Bind = %+v %v %v", b, created, err)
		}
		got, ok, err := s.Binding(ctx, p)
		if err != nil || !ok || got.ChatID != "c1" || got.ThreadRef != p {
			t.Fatalf("Binding = %+v %v %v", got, ok, err)
		}
		// Another thread in the same channel is another binding.
		p2 := p
		p2.Thread = "1700000000.000200"
		if _, ok, _ := s.Binding(ctx, p2); ok {
			t.Fatal("other thread bound")
		}
		if _, _, err := s.Bind(ctx, store.Binding{ThreadRef: p2, ChatID: "nope"}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Bind to a missing chat = %v, want ErrNotFound", err)
		}
		bs, err := s.BindingsOfChat(ctx, "c1")
		if err != nil || len(bs) != 1 || bs[0].ThreadRef != p {
			t.Fatalf("BindingsOfChat = %+v %v", bs, err)
		}
		// Deleting the chat removes its bindings.
		if err := s.DeleteChat(ctx, "c1"); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := s.Binding(ctx, p); ok {
			t.Fatal("binding survived its chat")
		}
	})
}

func TestBindRace(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		p := store.ThreadRef{Platform: "slack", Workspace: "T1", Channel: "C1", Thread: "1.2"}
		ids := []string{"a", "b", "c", "d", "e", "f"}
		for _, id := range ids {
			newChat(t, s, id)
		}
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			winners = map[string]int{}
			created int
		)
		for _, id := range ids {
			wg.Go(func() {
				b, c, err := s.Bind(ctx, store.Binding{ThreadRef: p, ChatID: id})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				winners[b.ChatID]++
				if c {
					created++
				}
				mu.Unlock()
			})
		}
		wg.Wait()
		if len(winners) != 1 || created != 1 {
			t.Fatalf("concurrent binds: winners %v, created %d", winners, created)
		}
	})
}

func TestSeenEvents(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		first, err := s.FirstSeen(ctx, "slack", "Ev1")
		if err != nil || !first {
			t.Fatalf("FirstSeen(Ev1) = %v %v", first, err)
		}
		again, err := s.FirstSeen(ctx, "slack", "Ev1")
		if err != nil || again {
			t.Fatalf("FirstSeen(Ev1) again = %v %v", again, err)
		}
		if other, _ := s.FirstSeen(ctx, "matrix", "Ev1"); !other {
			t.Fatal("the same id on another platform is another event")
		}
		n, err := s.PruneSeen(ctx, time.Now().Add(time.Minute))
		if err != nil || n != 2 {
			t.Fatalf("PruneSeen = %d %v", n, err)
		}
		if first, _ := s.FirstSeen(ctx, "slack", "Ev1"); !first {
			t.Fatal("a pruned id is not new again")
		}
	})
}

func TestRenderedMessages(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		p := store.ThreadRef{Platform: "slack", Workspace: "T1", Channel: "C1", Thread: "1.2"}
		m := store.RenderedMessage{RunID: "r1", Slot: "answer/0", ChatID: "c1", ThreadRef: p, MessageID: "1.3", FirstSeq: 4, LastSeq: 9, Hash: "h1"}
		if err := s.SaveRenderedMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
		card := m
		card.Slot, card.MessageID, card.Hash = "card/i1", "1.4", "h2"
		if err := s.SaveRenderedMessage(ctx, card); err != nil {
			t.Fatal(err)
		}
		m.LastSeq, m.Hash, m.Final = 20, "h3", true
		if err := s.SaveRenderedMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
		got, err := s.RenderedMessages(ctx, "r1")
		if err != nil || len(got) != 2 {
			t.Fatalf("RenderedMessages = %+v %v", got, err)
		}
		if got[0] != m || got[1] != card {
			t.Fatalf("RenderedMessages\n got %+v\nwant %+v %+v", got, m, card)
		}
		open, err := s.OpenRenders(ctx, "slack")
		if err != nil || len(open) != 1 || open[0].Slot != "card/i1" {
			t.Fatalf("OpenRenders = %+v %v", open, err)
		}
		if open, _ := s.OpenRenders(ctx, "matrix"); len(open) != 0 {
			t.Fatalf("OpenRenders(matrix) = %+v", open)
		}
	})
}

func TestForkChat(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		newChat(t, s, "c1")
		if err := s.SetSession(ctx, "c1", "claude", "sess-1"); err != nil {
			t.Fatal(err)
		}
		if err := s.ForkChat(ctx, "c1", "c2"); err != nil {
			t.Fatal(err)
		}
		c, err := s.GetChat(ctx, "c2")
		if err != nil {
			t.Fatal(err)
		}
		// A chat without events forks at seq 0.
		if c.Agent != "claude" || c.Model != "opus" || len(c.Sessions) != 0 || c.ForkSessions["claude"] != "sess-1" ||
			!c.ForkPending || c.ForkedFrom != "c1" || c.ForkSeq != 0 {
			t.Fatalf("forked chat %+v", c)
		}
		// A fork remembers the parent's last seq; the parent is not changed.
		if err := s.AppendEvents(ctx, events("c1", 1, 7)); err != nil {
			t.Fatal(err)
		}
		before, _ := s.GetChat(ctx, "c1")
		if err := s.ForkChat(ctx, "c1", "c4"); err != nil {
			t.Fatal(err)
		}
		if c4, _ := s.GetChat(ctx, "c4"); c4.ForkSeq != 7 || c4.ForkedFrom != "c1" || len(c4.Sessions) != 0 {
			t.Fatalf("fork after 7 events %+v", c4)
		}
		if after, _ := s.GetChat(ctx, "c1"); after.ForkPending || after.ForkedFrom != "" || after.Sessions["claude"] != "sess-1" ||
			!after.UpdatedAt.Equal(before.UpdatedAt) {
			t.Fatalf("the parent changed: %+v, was %+v", after, before)
		}
		if n, _ := s.LastSeq(ctx, "c4"); n != 0 {
			t.Fatalf("the fork has %d events of its own, want none", n)
		}
		if err := s.ForkChat(ctx, "nope", "c3"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("ForkChat(nope) = %v", err)
		}
		if err := s.ForkChat(ctx, "c1", "c2"); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("ForkChat onto an existing id = %v", err)
		}
	})
}
