package chatstore_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/chatstore"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// TestStore: chatops' view of the store round-trips bindings, rendered
// messages and chats, and maps a missing project to chatops.ErrNoProject.
func TestStore(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := t.Context()
		s := chatstore.Store{St: st}
		ch, err := s.CreateChat(ctx, chatops.Chat{Title: "t", Agent: "claude", Model: "opus", Mode: "plan", Cwd: "/w"})
		if err != nil || ch.ID == "" {
			t.Fatalf("CreateChat = %+v, %v", ch, err)
		}
		ch.Model = "sonnet"
		if err := s.UpdateChat(ctx, ch); err != nil {
			t.Fatal(err)
		}
		if err := s.SetSession(ctx, ch.ID, "claude", "s1"); err != nil {
			t.Fatal(err)
		}
		if got, err := s.GetChat(ctx, ch.ID); err != nil || got != ch {
			t.Fatalf("GetChat = %+v, %v; want %+v", got, err, ch)
		}
		if pc, err := s.Chat(ctx, ch.ID); err != nil || pc.Model != "sonnet" || pc.Mode != "plan" || pc.Sessions["claude"] != "s1" {
			t.Fatalf("Chat = %+v, %v", pc, err)
		}

		p := chatops.Place{Platform: "slack", Workspace: "T1", Channel: "C1", Thread: "1.2"}
		if _, ok, err := s.Binding(ctx, p); ok || err != nil {
			t.Fatalf("Binding(unbound) = %v, %v", ok, err)
		}
		at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		b, created, err := s.Bind(ctx, chatops.Binding{Place: p, ChatID: ch.ID, CreatedBy: "slack:U1", CreatedAt: at})
		want := chatops.Binding{Place: p, ChatID: ch.ID, CreatedBy: "slack:U1", CreatedAt: at}
		if err != nil || !created || b != want {
			t.Fatalf("Bind = %+v, %v, %v", b, created, err)
		}
		if got, ok, err := s.Binding(ctx, p); !ok || err != nil || got != want {
			t.Fatalf("Binding = %+v, %v, %v", got, ok, err)
		}
		if bs, err := s.BindingsOfChat(ctx, ch.ID); err != nil || len(bs) != 1 || bs[0] != want {
			t.Fatalf("BindingsOfChat = %+v, %v", bs, err)
		}
		if _, _, err := s.Bind(ctx, chatops.Binding{Place: chatops.Place{Platform: "slack", Thread: "9"}, ChatID: "nope"}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Bind(missing chat) = %v", err)
		}

		m := chatops.RenderedMessage{RunID: "r1", Slot: "answer/0", ChatID: ch.ID, Place: p, MessageID: "1.3", FirstSeq: 4, LastSeq: 9, Hash: "h"}
		if err := s.SaveRenderedMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
		if ms, err := s.RenderedMessages(ctx, "r1"); err != nil || len(ms) != 1 || ms[0] != m {
			t.Fatalf("RenderedMessages = %+v, %v", ms, err)
		}
		if ms, err := s.OpenRenders(ctx, "slack"); err != nil || len(ms) != 1 || ms[0] != m {
			t.Fatalf("OpenRenders = %+v, %v", ms, err)
		}
		m.Final = true
		if err := s.SaveRenderedMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
		if ms, _ := s.OpenRenders(ctx, "slack"); len(ms) != 0 {
			t.Fatalf("a final message is open: %+v", ms)
		}

		if err := st.CreateProject(ctx, &store.Project{Name: "team", Container: "team-c", Channels: []string{"C2", "C1"}, Allow: []string{"U1"}}); err != nil {
			t.Fatal(err)
		}
		pa, err := s.ProjectAccess(ctx, "team")
		if err != nil || pa.Name != "team" || !slices.Equal(pa.Channels, []string{"C1", "C2"}) || !slices.Equal(pa.Allow, []string{"U1"}) {
			t.Fatalf("ProjectAccess = %+v, %v", pa, err)
		}
		if _, err := s.ProjectAccess(ctx, "nope"); !errors.Is(err, chatops.ErrNoProject) || !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("ProjectAccess(nope) = %v, want ErrNoProject and ErrNotFound", err)
		}
	})
}
