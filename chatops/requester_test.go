// requester_test.go: with requester_only, stop, now, queue clear and the
// Run-now button are the running turn's requester's, a queued message's
// author's, or an admin's.

package chatops_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// requesterOnly is setupCatalog (runs' requesters read from the store) with
// requester_only in the thread's channel.
func requesterOnly(t *testing.T, st *store.Store) *fixture {
	t.Helper()
	f := setupCatalog(t, st, chatops.DeskOptions{})
	rules := f.policy.Channel(thread)
	rules.RequesterOnly = true
	f.policy.Set(chatops.Scope{Platform: "slack", Channel: "C1"}, rules)
	return f
}

// refused checks that who's text is refused with an ephemeral holding want.
func (f *fixture) refused(t *testing.T, who, text, want string) {
	t.Helper()
	n := len(f.surf.ephemerals)
	err := f.mention(t, who, text)
	if !errors.Is(err, chatops.ErrForbidden) || len(f.surf.ephemerals) != n+1 || !strings.Contains(f.surf.ephemerals[n], want) {
		t.Fatalf("%s %q = %v, ephemerals %q; want a refusal saying %q", who, text, err, f.surf.ephemerals[n:], want)
	}
}

// runNowButton is the Run-now click of the queue notice of the n-th queued message.
func (f *fixture) runNowButton(t *testing.T, n int, who string) chatops.Click {
	t.Helper()
	var notices []*message
	for _, m := range f.surf.inThread(thread) {
		if strings.HasPrefix(m.view.Body, "Queued (") && len(m.view.Buttons) == 1 {
			notices = append(notices, m)
		}
	}
	if len(notices) < n {
		t.Fatalf("%d queue notices, want %d", len(notices), n)
	}
	b := notices[n-1].view.Buttons[0]
	ref, err := chatops.DecodeRef(b.Value)
	if err != nil {
		t.Fatal(err)
	}
	return chatops.Click{Place: thread, User: user(who), Button: b.ID, Ref: ref}
}

func TestRequesterOnlyTurnControl(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Run("others may not stop the turn, run it over, or drop another's queued message", func(t *testing.T) {
			f := requesterOnly(t, st)
			chatID := f.busy(t, make(chan struct{})) // UALLOWED's turn
			f.write(t, "UAPPROVER2", "second's")
			f.write(t, "UAPPROVER", "approver's")
			f.write(t, "UALLOWED", "mine")

			f.refused(t, "UAPPROVER", "stop", "only <@UALLOWED> or an admin may stop the running turn")
			f.refused(t, "UAPPROVER", "now 1", "only <@UAPPROVER2> or an admin may run it now")
			f.refused(t, "UAPPROVER", "now 2", "only <@UALLOWED> or an admin may stop the running turn")
			f.refused(t, "UAPPROVER", "now", "only <@UALLOWED> or an admin may stop the running turn") // their latest
			n := len(f.surf.ephemerals)
			err := f.threads.HandleClick(t.Context(), f.runNowButton(t, 1, "UAPPROVER"))
			if !errors.Is(err, chatops.ErrForbidden) || len(f.surf.ephemerals) != n+1 || !strings.Contains(f.surf.ephemerals[n], "only <@UAPPROVER2> or an admin may run it now") {
				t.Fatalf("another's Run-now press = %v, ephemerals %q", err, f.surf.ephemerals[n:])
			}
			var stop *message
			waitFor(t, "the Stop button", func() bool {
				stop = f.find(thread, func(m *message) bool { return len(m.view.Buttons) == 1 && m.view.Buttons[0].ID == chatops.ButtonStop })
				return stop != nil
			})
			ref, err := chatops.DecodeRef(stop.view.Buttons[0].Value)
			if err != nil {
				t.Fatal(err)
			}
			n = len(f.surf.ephemerals)
			if err := f.threads.HandleClick(t.Context(), chatops.Click{Place: thread, User: user("UAPPROVER"), Button: chatops.ButtonStop, Ref: ref}); !errors.Is(err, chatops.ErrForbidden) ||
				len(f.surf.ephemerals) != n+1 || !strings.Contains(f.surf.ephemerals[n], "only <@UALLOWED> or an admin may stop the running turn") {
				t.Fatalf("another's Stop press = %v, ephemerals %q", err, f.surf.ephemerals[n:])
			}
			if _, ok := f.bot.Active(chatID); !ok || f.threads.Queued(chatID) != 3 {
				t.Fatalf("a refusal changed the turn or the queue (%d queued)", f.threads.Queued(chatID))
			}

			if err := f.mention(t, "UAPPROVER2", "queue clear"); err != nil {
				t.Fatal(err)
			}
			if f.posted("Dropped your 1 queued message; the others' stay queued") == nil {
				t.Fatalf("own queue clear said %q", f.lastNotice())
			}
			if got := len(stored(t, st)); got != 2 || f.threads.Queued(chatID) != 2 {
				t.Fatalf("after an own clear: %d queued, %d stored", f.threads.Queued(chatID), got)
			}
			f.refused(t, "UAPPROVER2", "queue clear", "you may drop only your own queued messages, and you have none")
			if f.threads.Queued(chatID) != 2 {
				t.Fatal("a refused clear dropped messages")
			}

			// The requester stops their turn: their own queued message goes,
			// the approver's runs next.
			f.prov.Add(chatopstest.Answer("approver's done"))
			if err := f.mention(t, "UALLOWED", "stop"); err != nil {
				t.Fatal(err)
			}
			if f.posted("Stopping the running turn. Dropped 1 queued message(s).") == nil {
				t.Fatalf("requester's stop said %q", f.lastNotice())
			}
			waitFor(t, "the approver's message to run", func() bool { return len(f.prov.Requests()) == 2 && f.threads.Queued(chatID) == 0 })
			if p := f.prov.Requests()[1].Prompt; !strings.HasSuffix(p, "approver's") {
				t.Fatalf("ran %q next", p)
			}
		})

		t.Run("an admin stops, runs over and clears anyone's", func(t *testing.T) {
			f := requesterOnly(t, st)
			chatID := f.busy(t, make(chan struct{}))
			f.prov.Add(chatopstest.Gated(make(chan struct{}), "approver working"))
			f.write(t, "UAPPROVER", "approver's")
			if err := f.mention(t, "UADMIN", "now 1"); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the approver's message to run", func() bool {
				_, ok := f.bot.Active(chatID)
				return ok && len(f.prov.Requests()) == 2 && f.threads.Queued(chatID) == 0
			})
			f.write(t, "UALLOWED", "one")
			f.write(t, "UAPPROVER2", "two")
			if err := f.mention(t, "UADMIN", "queue clear"); err != nil {
				t.Fatal(err)
			}
			if f.posted("Dropped 2 queued messages; the running turn goes on") == nil || f.threads.Queued(chatID) != 0 {
				t.Fatalf("admin's clear said %q", f.lastNotice())
			}
			if err := f.mention(t, "UADMIN", "stop"); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the turn to stop", func() bool { _, ok := f.bot.Active(chatID); return !ok })
		})

		t.Run("the requester's own Run-now button works", func(t *testing.T) {
			f := requesterOnly(t, st)
			chatID := f.busy(t, make(chan struct{}))
			f.prov.Add(chatopstest.Answer("mine done"))
			f.write(t, "UALLOWED", "mine")
			if err := f.threads.HandleClick(t.Context(), f.runNowButton(t, 1, "UALLOWED")); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the pressed message to run", func() bool { return len(f.prov.Requests()) == 2 && f.threads.Queued(chatID) == 0 })
		})
	})
}
