package store_test

import (
	"fmt"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

func TestEventsBefore(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		newChat(t, s, "c1")
		newChat(t, s, "c2")
		if evs, err := s.EventsBefore(ctx, "c1", 0, 10); err != nil || len(evs) != 0 {
			t.Fatalf("EventsBefore(empty) = %v, %v", evs, err)
		}
		if err := s.AppendEvents(ctx, events("c1", 1, 2500)); err != nil {
			t.Fatal(err)
		}
		if err := s.AppendEvents(ctx, events("c2", 1, 3)); err != nil {
			t.Fatal(err)
		}
		var got []store.Event
		before := int64(0) // from the end
		for {
			page, err := s.EventsBefore(ctx, "c1", before, 700)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			got = append(got, page...)
			before = page[len(page)-1].Seq
		}
		if len(got) != 2500 {
			t.Fatalf("paged %d events backwards, want 2500", len(got))
		}
		for i, e := range got {
			seq := int64(2500 - i)
			if e.Seq != seq || e.ChatID != "c1" || e.RunID != "r1" || e.Type != "text" || e.At.IsZero() || string(e.Payload) != fmt.Sprintf(`{"n":%d}`, seq) {
				t.Fatalf("event %d = %+v, want seq %d", i, e, seq)
			}
		}
		if evs, _ := s.EventsBefore(ctx, "c1", 3, 10); len(evs) != 2 || evs[0].Seq != 2 || evs[1].Seq != 1 {
			t.Fatalf("EventsBefore(3) = %+v", evs)
		}
		if evs, _ := s.EventsBefore(ctx, "c2", 0, 2); len(evs) != 2 || evs[0].Seq != 3 || evs[0].ChatID != "c2" {
			t.Fatalf("EventsBefore(c2) = %+v", evs)
		}
		// A hole in the seqs (the hub never leaves one) costs more reads, not rows.
		newChat(t, s, "c3")
		if err := s.AppendEvents(ctx, append(events("c3", 1, 5), events("c3", 100, 102)...)); err != nil {
			t.Fatal(err)
		}
		var seqs []int64
		evs, err := s.EventsBefore(ctx, "c3", 0, 5)
		for _, e := range evs {
			seqs = append(seqs, e.Seq)
		}
		if err != nil || fmt.Sprint(seqs) != "[102 101 100 5 4]" {
			t.Fatalf("EventsBefore(c3) = %v, %v", seqs, err)
		}
		if evs, err := s.EventsBefore(ctx, "c3", 2, 5); err != nil || len(evs) != 1 || evs[0].Seq != 1 {
			t.Fatalf("EventsBefore(c3, 2) = %+v, %v", evs, err)
		}
	})
}

// TestEventsAfterHoles: the windowed page (seqs above afterSeq, limit wide)
// goes on past a window that came back short, so a hole in the seqs (the hub
// never leaves one) loses nothing and an end reads nothing more.
func TestEventsAfterHoles(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		newChat(t, s, "c1")
		all := append(append(events("c1", 1, 5), events("c1", 100, 102)...), events("c1", 5000, 5001)...)
		if err := s.AppendEvents(ctx, all); err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct {
			after int64
			limit int
			want  string
		}{
			{0, 4, "[1 2 3 4]"},
			{0, 7, "[1 2 3 4 5 100 101]"},
			{3, 10, "[4 5 100 101 102 5000 5001]"},
			{5, 2, "[100 101]"},
			{102, 5, "[5000 5001]"},
			{5001, 5, "[]"},
		} {
			evs, err := s.EventsAfter(ctx, "c1", tt.after, tt.limit)
			seqs := []int64{}
			for _, e := range evs {
				seqs = append(seqs, e.Seq)
			}
			if err != nil || fmt.Sprint(seqs) != tt.want {
				t.Errorf("EventsAfter(%d, %d) = %v, %v; want %s", tt.after, tt.limit, seqs, err, tt.want)
			}
		}
	})
}

// TestLastSeqs: the last seq of many chats in one call, 0 for a chat without
// events or unknown.
func TestLastSeqs(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		for _, c := range []string{"c1", "c2", "empty"} {
			newChat(t, s, c)
		}
		if err := s.AppendEvents(ctx, append(events("c1", 1, 7), events("c2", 1, 3)...)); err != nil {
			t.Fatal(err)
		}
		got, err := s.LastSeqs(ctx, []agent.ChatID{"c1", "c2", "empty", "nosuch"})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != "map[c1:7 c2:3 empty:0 nosuch:0]" {
			t.Fatalf("LastSeqs = %v", got)
		}
	})
}

// TestEventsAfterWhileAppending: pages read while batches are committed are
// gapless runs of seqs (a short window read again from its end, not from the
// window's edge, which a commit between the two queries may have filled).
func TestEventsAfterWhileAppending(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		newChat(t, s, "c1")
		const batches, size, page = 300, 7, 10
		done := make(chan error, 1)
		go func() {
			for i := range int64(batches) {
				if err := s.AppendEvents(ctx, events("c1", i*size+1, (i+1)*size)); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
		after, appended := int64(0), false
		for after < batches*size {
			evs, err := s.EventsAfter(ctx, "c1", after, page)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range evs {
				if e.Seq != after+1 {
					t.Fatalf("page after %d holds seq %d: a gap", after, e.Seq)
				}
				after = e.Seq
			}
			if !appended {
				select {
				case err := <-done:
					if err != nil {
						t.Fatal(err)
					}
					appended = true
				default:
				}
			}
		}
		if !appended {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
	})
}
