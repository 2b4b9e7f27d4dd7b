package store_test

import (
	"fmt"
	"testing"

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
