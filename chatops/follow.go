// follow.go: the renderer of a thread. The thread's actor starts it when it
// sends a prompt; a goroutine then follows the chat's events (replaying from
// the last rendered seq), folds each run into a runState, keeps the thread's
// pending cards and hands the resulting views to the workspace's outbox.

package chatops

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/chatops/render"
)

// follower is the rendering state of one thread's chat, guarded by thread.mu.
type follower struct {
	chatID  agent.ChatID
	place   Place
	running bool
	// kick is set when a new run was announced while the goroutine was
	// running, so it does not stop for idleness.
	kick bool
	// next is the seq after which a restarted follower resumes.
	next int64
}

// ensureFollower makes sure a goroutine renders the chat into the place.
// Called before a prompt is sent, it starts after the chat's current last seq.
func (t *Desk) ensureFollower(ctx context.Context, th *thread, chatID agent.ChatID) error {
	th.mu.Lock()
	f := th.follower
	if f != nil && f.running && f.chatID == chatID {
		f.kick = true
		th.mu.Unlock()
		return nil
	}
	th.mu.Unlock()
	var from int64
	if f == nil {
		seq, err := t.bot.LastSeq(ctx, chatID)
		if err != nil {
			return err
		}
		from = seq
	}
	t.start(th, chatID, from, f == nil, false)
	return nil
}

// start runs the chat's follower from seq from (or from where the last one
// stopped when fresh is false) unless one runs. resumed marks a follower
// started after a restart, which ends runs the event log never ended.
func (t *Desk) start(th *thread, chatID agent.ChatID, from int64, fresh, resumed bool) {
	th.mu.Lock()
	defer th.mu.Unlock()
	f := th.follower
	if f != nil && f.running {
		f.kick = true
		return
	}
	if f == nil || f.chatID != chatID {
		f = &follower{chatID: chatID, next: from}
		th.follower = f
	} else if fresh && from < f.next {
		f.next = from
	}
	f.place, f.running, f.kick = th.place, true, false
	start := f.next
	t.wg.Go(func() { t.follow(th, f, start, resumed) })
}

// Resume restarts the rendering of the platform's runs whose messages do not
// show their end yet (after a restart): each chat is replayed from its
// earliest unfinished run, the same messages are edited, and content already
// shown is not sent again. The platform's busy queues are reloaded too, and
// each drains when its chat is free (queue.go).
func (t *Desk) Resume(ctx context.Context, platform string) error {
	open, err := t.store.OpenRenders(ctx, platform)
	if err != nil {
		return err
	}
	from := map[agent.ChatID]int64{}
	place := map[agent.ChatID]Place{}
	for _, rm := range open {
		if s, ok := from[rm.ChatID]; !ok || rm.FirstSeq-1 < s {
			from[rm.ChatID] = max(rm.FirstSeq-1, 0)
			place[rm.ChatID] = rm.Place
		}
	}
	for chatID, seq := range from {
		t.log.InfoContext(ctx, "resuming the rendering of a chat", logkey.ChatID, chatID, "after_seq", seq)
		t.start(t.lookThread(place[chatID]), chatID, seq, true, true)
	}
	return t.restoreQueues(ctx, platform)
}

func renderTick(b Budget) time.Duration {
	return min(max(b.WithDefaults().MinInterval/4, 10*time.Millisecond), 250*time.Millisecond)
}

// follow renders the chat until it has been idle for IdleFollow.
func (t *Desk) follow(th *thread, f *follower, from int64, resumed bool) {
	ctx, cancel := context.WithCancel(t.base)
	defer cancel()
	defer t.forget(th)
	log := t.log.With(logkey.ChatID, f.chatID)
	last := from
	stop := func() {
		th.mu.Lock()
		f.running, f.next = false, last
		th.mu.Unlock()
	}
	ob, err := t.outbox(f.place)
	if err != nil {
		log.ErrorContext(ctx, "render chat", "err", err)
		stop()
		return
	}
	s, _ := t.surface(f.place.Platform)
	ropts := t.opts.Render
	ropts.Mention = s.Mention
	if n := t.partLimit(f.place.Platform); n > 0 {
		ropts.PartLimit = n
	}
	project := ""
	if c, err := t.bot.Chat(ctx, f.chatID); err == nil {
		project = c.Project
	}
	caughtUp, err := t.bot.LastSeq(ctx, f.chatID)
	if err != nil {
		log.ErrorContext(ctx, "render chat", "err", err)
		stop()
		return
	}
	events := t.bot.Subscribe(ctx, f.chatID, from)
	tick := time.NewTicker(renderTick(t.opts.Budget))
	defer tick.Stop()
	idle := time.NewTimer(t.opts.IdleFollow)
	defer idle.Stop()

	var (
		cur   *render.Run
		dirty bool
	)
	push := func() {
		for _, sv := range cur.Views() {
			ob.Put(f.chatID, cur.RunID(), f.place, cur.FirstSeq(), cur.LastSeq(), sv)
		}
		dirty = false
	}
	finish := func() {
		push()
		if err := ob.Flush(ctx, cur.RunID()); err != nil {
			return
		}
		ob.Forget(cur.RunID())
		cur = nil
		th.mu.Lock()
		f.next = last
		th.mu.Unlock()
	}
	// orphan ends a run the event log never ended (the process that ran it
	// died, or its events could not be stored): its messages say so.
	orphan := func() {
		if cur == nil || cur.Done() {
			return
		}
		if r, ok := t.bot.Active(f.chatID); ok && r.ID == cur.RunID() {
			return
		}
		cur.Interrupt("the bot restarted before the run ended")
		finish()
	}
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				stop()
				return
			}
			last = ev.Seq
			if ev.RunID != "" {
				if cur != nil && cur.RunID() != ev.RunID {
					orphan()
				}
				if cur == nil {
					rows, err := t.store.RenderedMessages(ctx, ev.RunID)
					if err != nil {
						log.WarnContext(ctx, "read rendered messages", logkey.RunID, ev.RunID, "err", err)
					}
					ob.Load(rows)
					cur = render.NewRun(ropts, f.chatID, ev.RunID, project)
				}
				cur.Apply(ev)
				th.noteInteraction(cur, ev.Type)
				switch {
				case cur.Done():
					finish()
				case urgent(ev.Type):
					push()
				default:
					dirty = true
				}
			}
			log.DebugContext(ctx, "render event", "seq", ev.Seq, "type", ev.Type, "caught_up", caughtUp)
			if resumed && ev.Seq == caughtUp {
				// The replay after a restart reached the end of the log: a
				// run still open there died with the process that ran it.
				orphan()
			}
			if !idle.Stop() {
				select {
				case <-idle.C:
				default:
				}
			}
			idle.Reset(t.opts.IdleFollow)
		case <-tick.C:
			if dirty && cur != nil {
				push()
			}
		case <-idle.C:
			if cur != nil {
				idle.Reset(t.opts.IdleFollow)
				continue
			}
			th.mu.Lock()
			if f.kick {
				f.kick = false
				th.mu.Unlock()
				idle.Reset(t.opts.IdleFollow)
				continue
			}
			f.running, f.next = false, last
			th.mu.Unlock()
			return
		case <-ctx.Done():
			stop()
			return
		}
	}
}

// urgent reports whether an event changes what the thread must see now
// (rather than at the next coalesced update).
func urgent(typ string) bool {
	switch agent.EventType(typ) {
	case agent.EventRunStarted, agent.EventInteractionRequested, agent.EventInteractionResolved:
		return true
	}
	return false
}

// noteInteraction keeps the pending interactions of live runs, for the
// front-ends' answer forms.
func (th *thread) noteInteraction(r *render.Run, typ string) {
	switch agent.EventType(typ) {
	case agent.EventInteractionRequested, agent.EventInteractionResolved:
	default:
		if !r.Done() {
			return
		}
	}
	th.mu.Lock()
	defer th.mu.Unlock()
	for _, c := range r.Cards() {
		k := cardKey{r.RunID(), agent.InteractionID(c.Interaction.ID)}
		if c.Pending {
			in := c.Interaction
			th.pending[k] = &in
			if th.cardAt == nil {
				th.cardAt = map[cardKey]time.Time{}
			}
			th.cardAt[k] = c.At
		} else {
			delete(th.pending, k)
			delete(th.cardAt, k)
		}
	}
}

// ErrNoInteraction is returned by Questions for an interaction that is not
// pending.
var ErrNoInteraction = errors.New("chatops: no such pending interaction")

// Questions returns the questions of the pending interaction a button names
// (read from the thread's cards without waiting for its actor: a modal must
// open within seconds of the click).
func (t *Desk) Questions(_ context.Context, ref Ref) ([]agent.Question, error) {
	var (
		qs    []agent.Question
		found bool
	)
	t.eachThread(func(th *thread) {
		if in, ok := th.pendingInteraction(ref); ok && !found {
			qs, found = in.Questions, true
		}
	})
	if !found {
		return nil, fmt.Errorf("%w: %s", ErrNoInteraction, ref.InteractionID)
	}
	return qs, nil
}
