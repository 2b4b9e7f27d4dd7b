package store_test

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// TestQueuedPrompts: a queued prompt keeps everything the message carried
// (text, file names, images byte for byte, sender, message id, when it was
// sent), threads keep their own order, a prompt moves to the head, one is
// deleted, a thread's queue is cleared, and a chat's deletion takes its
// queue with it.
func TestQueuedPrompts(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		newChat(t, s, "c1")
		newChat(t, s, "c2")
		p1 := store.ThreadRef{Platform: "slack", Workspace: "T1", Channel: "C1", Thread: "1700000000.000100"}
		p2 := store.ThreadRef{Platform: "slack", Workspace: "T1", Channel: "C1", Thread: "1700000000.000200"}
		png := []byte{0x89, 'P', 'N', 'G', 0, 1, 2, 0xff}
		sent := time.Date(2026, 12, 1, 10, 0, 0, 123456000, time.UTC)
		first := store.QueuedPrompt{ID: "q1", ChatID: "c1", ThreadRef: p1, MessageID: "1700000001.000001", Sender: "slack:U1",
			Text: "look at this\n\n(Attached files, saved in the working directory: a.txt)", Files: []string{"a.txt"},
			Images: []store.QueuedImage{{MediaType: "image/png", Name: "shot.png", Data: png}, {MediaType: "image/jpeg", Data: []byte{}}},
			Sent:   sent}
		for _, q := range []store.QueuedPrompt{
			first,
			{ID: "q2", ChatID: "c1", ThreadRef: p1, Sender: "slack:U2", Text: "second"},
			{ID: "q3", ChatID: "c2", ThreadRef: p2, Sender: "slack:U1", Text: "other thread"},
			{ID: "q4", ChatID: "c1", ThreadRef: p1, Sender: "slack:U1", Text: "third"},
		} {
			if err := s.EnqueuePrompt(ctx, q); err != nil {
				t.Fatalf("EnqueuePrompt(%s): %v", q.ID, err)
			}
		}
		if err := s.EnqueuePrompt(ctx, store.QueuedPrompt{ID: "q1", ChatID: "c1", ThreadRef: p1}); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("a repeated id = %v, want ErrConflict", err)
		}
		if err := s.EnqueuePrompt(ctx, store.QueuedPrompt{ID: "q9", ChatID: "nope", ThreadRef: p1}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a missing chat = %v, want ErrNotFound", err)
		}
		ids := func(qs []store.QueuedPrompt) []string {
			var out []string
			for _, q := range qs {
				out = append(out, q.ID)
			}
			return out
		}
		all, err := s.QueuedPrompts(ctx, "slack")
		if err != nil || !slices.Equal(ids(all), []string{"q1", "q2", "q4", "q3"}) {
			t.Fatalf("QueuedPrompts = %v %v", ids(all), err)
		}
		got := all[0]
		if got.ChatID != "c1" || got.ThreadRef != p1 || got.MessageID != first.MessageID || got.Sender != "slack:U1" ||
			got.Text != first.Text || !slices.Equal(got.Files, []string{"a.txt"}) || !got.Sent.Equal(sent) || got.CreatedAt.IsZero() {
			t.Fatalf("queued prompt = %+v", got)
		}
		if len(got.Images) != 2 || got.Images[0].MediaType != "image/png" || got.Images[0].Name != "shot.png" ||
			!bytes.Equal(got.Images[0].Data, png) || got.Images[1].MediaType != "image/jpeg" || len(got.Images[1].Data) != 0 {
			t.Fatalf("images = %+v", got.Images)
		}
		if all[1].Files == nil || len(all[1].Files) != 0 || !all[1].Sent.IsZero() || len(all[1].Images) != 0 {
			t.Fatalf("a plain prompt = %+v", all[1])
		}
		if other, _ := s.QueuedPrompts(ctx, "matrix"); len(other) != 0 {
			t.Fatalf("matrix has %v", ids(other))
		}

		if err := s.QueuePromptFirst(ctx, p1, "q4"); err != nil {
			t.Fatal(err)
		}
		if err := s.QueuePromptFirst(ctx, p1, "q3"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("moving another thread's prompt = %v, want ErrNotFound", err)
		}
		if q, err := s.QueuedPromptsOf(ctx, p1); err != nil || !slices.Equal(ids(q), []string{"q4", "q1", "q2"}) {
			t.Fatalf("after q4 first: %v %v", ids(q), err)
		}
		// A prompt queued after the move still goes last.
		if err := s.EnqueuePrompt(ctx, store.QueuedPrompt{ID: "q5", ChatID: "c1", ThreadRef: p1, Text: "fifth"}); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteQueuedPrompt(ctx, "q1"); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteQueuedPrompt(ctx, "q1"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("deleting twice = %v, want ErrNotFound", err)
		}
		var images int
		if err := s.DB().GetContext(ctx, &images, `SELECT COUNT(*) FROM queued_images WHERE prompt_id = 'q1'`); err != nil || images != 0 {
			t.Fatalf("images of a deleted prompt: %d %v", images, err)
		}
		if q, _ := s.QueuedPromptsOf(ctx, p1); !slices.Equal(ids(q), []string{"q4", "q2", "q5"}) {
			t.Fatalf("after delete: %v", ids(q))
		}
		if n, err := s.ClearQueue(ctx, p1); err != nil || n != 3 {
			t.Fatalf("ClearQueue = %d %v", n, err)
		}
		if q, _ := s.QueuedPromptsOf(ctx, p1); len(q) != 0 {
			t.Fatalf("after clear: %v", ids(q))
		}
		if err := s.DeleteChat(ctx, "c2"); err != nil {
			t.Fatal(err)
		}
		if q, _ := s.QueuedPrompts(ctx, "slack"); len(q) != 0 {
			t.Fatalf("a deleted chat's queue survived: %v", ids(q))
		}
	})
}
