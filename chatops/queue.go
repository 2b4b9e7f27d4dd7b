// queue.go: the busy queue. A prompt that arrives while its chat's turn runs
// waits in its thread's queue, persisted with everything the message carried
// (text, saved files, images, sender, message id), and starts when the turn
// ends, in order; a restart reloads the queue (Resume). People see it
// (`queue`), clear it (`queue clear`, `stop`), and may stop the running turn
// to run a queued message at once (`now`, or the notice's button).

package chatops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/agentcore/prompt"
)

// ButtonRunNowPrefix prefixes the id of the button on a "Queued" notice that
// stops the running turn and runs that queued message next: the rest of the
// id is the queued prompt's id, the value a Ref naming the chat. Front-ends
// route it like every "tl_" button (a Click).
const ButtonRunNowPrefix = "tl_now_"

// busyRetry is how soon a queue whose chat is busy elsewhere (a run of
// another process, one not reattached yet) tries again.
const busyRetry = 2 * time.Second

// previewRunes bounds a queued message's text in the `queue` listing.
const previewRunes = 80

// send starts the prompt, or queues it behind the running turn (in the
// thread's actor). A prompt that starts now carries the thread's context
// (threadcontext.go); a queued one gets it when it starts.
func (t *Desk) send(ctx context.Context, th *thread, b Binding, o promptOrigin, m Message, text string, images []agent.Image, files []string) error {
	if err := t.ensureFollower(ctx, th, b.ChatID); err != nil {
		return t.fail(ctx, b.Place, "I could not follow this chat", err)
	}
	th.mu.Lock()
	busy := len(th.queue) > 0
	th.mu.Unlock()
	var (
		run *prompt.Run
		err error
	)
	if !busy {
		rules := t.policy.Channel(b.Place)
		full := t.withThreadContext(ctx, b.Place, b.ChatID, o, text)
		run, err = t.bot.Send(ctx, Prompt{ChatID: b.ChatID, Text: full, Images: images, By: m.User.Qualified(), Interactive: true,
			InteractionTimeout: rules.InteractionTimeout, Skills: rules.Skills})
		if err == nil {
			t.prompted(b.Place, o.sent)
		}
	}
	if busy || errors.Is(err, ErrBusy) {
		return t.enqueuePrompt(ctx, th, b, m, text, images, files)
	}
	if err != nil {
		return t.fail(ctx, b.Place, "I could not start the agent", err)
	}
	t.watch(th, b.ChatID, run)
	return nil
}

// enqueuePrompt persists the prompt at the end of the thread's queue, tells
// the thread, and makes sure the queue drains when the chat is free.
func (t *Desk) enqueuePrompt(ctx context.Context, th *thread, b Binding, m Message, text string, images []agent.Image, files []string) error {
	if t.opts.Redact != nil {
		text = t.opts.Redact.String(text) // nothing secret is stored
	}
	q := QueuedPrompt{ID: uuid.NewString(), ChatID: b.ChatID, Place: b.Place, MessageID: m.ID, Sender: m.User.Qualified(),
		Text: text, Files: files, Images: images, Sent: m.Sent}
	if err := t.store.EnqueuePrompt(ctx, q); err != nil {
		return t.fail(ctx, b.Place, "The chat is busy and I could not queue your message", err)
	}
	q.Queued = time.Now()
	th.mu.Lock()
	th.queue = append(th.queue, q)
	n := len(th.queue)
	th.mu.Unlock()
	t.log.InfoContext(ctx, "prompt queued", logkey.ChatID, b.ChatID, logkey.Place, b.Place.String(), "queued", n, "images", len(images), "files", len(files))
	t.watchActive(th, b.ChatID)
	s, err := t.surface(b.Platform)
	if err != nil {
		return err
	}
	if m.ID != "" {
		if rerr := s.React(ctx, b.Place, m.ID, "hourglass_flowing_sand"); rerr != nil {
			t.log.WarnContext(ctx, "react to a queued message", "err", rerr)
		}
	}
	_, err = s.Post(ctx, b.Place, View{
		Body:    fmt.Sprintf("Queued (%d waiting): it runs when the current turn ends. `stop` stops the turn; `now %d` stops it and runs this message now; `queue` lists the waiting messages.", n, n),
		Buttons: []Button{{ID: ButtonRunNowPrefix + q.ID, Label: "Stop the turn and run this now", Value: Ref{ChatID: b.ChatID}.Encode(), Style: StyleDanger}},
	})
	return err
}

// watchActive watches the chat's active run so the queue drains after it;
// when this process runs none, the drain is queued at once.
func (t *Desk) watchActive(th *thread, chatID agent.ChatID) {
	if r, ok := t.bot.Active(chatID); ok {
		t.watch(th, chatID, r)
		return
	}
	t.wg.Go(func() { t.queueDrain(th, chatID) })
}

// watch queues the drain of the thread's prompts when run ends.
func (t *Desk) watch(th *thread, chatID agent.ChatID, run *prompt.Run) {
	th.mu.Lock()
	if th.watching[run.ID] {
		th.mu.Unlock()
		return
	}
	th.watching[run.ID] = true
	th.mu.Unlock()
	t.wg.Go(func() {
		select {
		case <-run.Done():
		case <-t.base.Done():
		}
		th.mu.Lock()
		delete(th.watching, run.ID)
		th.mu.Unlock()
		t.queueDrain(th, chatID)
	})
}

// retryLater queues the drain again after busyRetry: the chat is busy with
// a run this process does not follow (another replica's, or one a restart
// has not reattached yet), whose end it cannot watch.
func (t *Desk) retryLater(th *thread, chatID agent.ChatID) {
	th.mu.Lock()
	if th.retrying {
		th.mu.Unlock()
		return
	}
	th.retrying = true
	th.mu.Unlock()
	t.wg.Go(func() {
		timer := time.NewTimer(busyRetry)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-t.base.Done():
		}
		th.mu.Lock()
		th.retrying = false
		th.mu.Unlock()
		t.queueDrain(th, chatID)
	})
}

// queueDrain puts the drain of the thread's prompts on its queue (behind
// what people did meanwhile, e.g. a stop).
func (t *Desk) queueDrain(th *thread, chatID agent.ChatID) {
	err := t.enqueue(t.base, th.place, item{what: "queued prompt", run: func(ctx context.Context, th *thread) error {
		t.drain(ctx, th, chatID)
		return nil
	}}, true)
	if err != nil && !errors.Is(err, ErrClosed) {
		t.log.WarnContext(t.base, "queue the drain of a thread", logkey.Place, th.place.String(), "err", err)
	}
}

// drain starts the thread's next queued prompt (in the thread's actor). The
// prompt leaves the queue (and the store) once it started, or failed to
// start for another reason than a busy chat.
func (t *Desk) drain(ctx context.Context, th *thread, chatID agent.ChatID) {
	for {
		th.mu.Lock()
		if len(th.queue) == 0 {
			th.mu.Unlock()
			return
		}
		next := th.queue[0]
		th.mu.Unlock()
		if err := t.ensureFollower(ctx, th, next.ChatID); err != nil {
			t.log.WarnContext(ctx, "follow a chat for its queued prompt", logkey.ChatID, next.ChatID, "err", err)
		}
		rules := t.policy.Channel(next.Place)
		full := t.withThreadContext(ctx, next.Place, next.ChatID, promptOrigin{id: next.MessageID, sent: next.Sent}, next.Text)
		run, err := t.bot.Send(ctx, Prompt{ChatID: next.ChatID, Text: full, Images: next.Images, By: next.Sender, Interactive: true,
			InteractionTimeout: rules.InteractionTimeout, Skills: rules.Skills})
		if err == nil {
			t.prompted(next.Place, next.Sent)
		}
		if errors.Is(err, ErrBusy) {
			if r, ok := t.bot.Active(chatID); ok {
				t.watch(th, chatID, r) // someone else started a run here: wait for it
			} else {
				t.retryLater(th, chatID)
			}
			return
		}
		t.unqueue(ctx, th, next.ID)
		if err != nil {
			_ = t.fail(ctx, next.Place, "I could not start the queued message", err)
			continue
		}
		t.log.InfoContext(ctx, "queued prompt started", logkey.ChatID, next.ChatID, logkey.RunID, run.ID, logkey.Place, next.Place.String())
		t.watch(th, chatID, run)
		return
	}
}

// unqueue removes a queued prompt from the thread and the store.
func (t *Desk) unqueue(ctx context.Context, th *thread, id string) {
	th.mu.Lock()
	th.queue = slices.DeleteFunc(th.queue, func(q QueuedPrompt) bool { return q.ID == id })
	th.mu.Unlock()
	if err := t.store.DeleteQueuedPrompt(ctx, id); err != nil {
		t.log.WarnContext(ctx, "delete a queued prompt", logkey.Place, th.place.String(), logkey.QueuedID, id, "err", err)
	}
}

// dropQueue forgets the thread's queued prompts, here and in the store, and
// returns how many there were.
func (t *Desk) dropQueue(ctx context.Context, th *thread) (int, error) {
	th.mu.Lock()
	n := len(th.queue)
	th.queue = nil
	th.mu.Unlock()
	stored, err := t.store.ClearQueue(ctx, th.place)
	if err != nil {
		return n, err
	}
	return max(n, stored), nil
}

// dropQueueFor drops the thread's queue for m's sender: all of it, or with
// requester_only (no admin) only the sender's own queued prompts.
func (t *Desk) dropQueueFor(ctx context.Context, th *thread, m Message) (int, error) {
	if t.requesterOnly(m.User, m.Place) {
		return t.dropOwn(ctx, th, m.User.Qualified()), nil
	}
	return t.dropQueue(ctx, th)
}

// restoreQueues reloads the platform's persisted queues (after a restart):
// each thread's prompts go back in its queue, in order, and drain when the
// chat is free. It runs in each thread's actor.
func (t *Desk) restoreQueues(ctx context.Context, platform string) error {
	qs, err := t.store.QueuedPrompts(ctx, platform)
	if err != nil {
		return err
	}
	byPlace := map[Place][]QueuedPrompt{}
	var places []Place
	for _, q := range qs {
		if _, ok := byPlace[q.Place]; !ok {
			places = append(places, q.Place)
		}
		byPlace[q.Place] = append(byPlace[q.Place], q)
	}
	for _, p := range places {
		stored := byPlace[p]
		err := t.enqueue(ctx, p, item{what: "restore queue", run: func(ctx context.Context, th *thread) error {
			th.mu.Lock()
			for _, q := range stored {
				if !slices.ContainsFunc(th.queue, func(have QueuedPrompt) bool { return have.ID == q.ID }) {
					th.queue = append(th.queue, q)
				}
			}
			th.mu.Unlock()
			t.log.InfoContext(ctx, "queue restored", logkey.Place, p.String(), logkey.ChatID, stored[0].ChatID, "queued", len(stored))
			if r, ok := t.bot.Active(stored[0].ChatID); ok {
				t.watch(th, stored[0].ChatID, r)
				return nil
			}
			t.drain(ctx, th, stored[0].ChatID)
			return nil
		}}, true)
		if err != nil {
			return err
		}
	}
	return nil
}

// eachThread calls f for every thread the desk holds.
func (t *Desk) eachThread(f func(th *thread)) {
	t.mu.Lock()
	ths := make([]*thread, 0, len(t.threads))
	for _, th := range t.threads {
		ths = append(ths, th)
	}
	t.mu.Unlock()
	for _, th := range ths {
		f(th)
	}
}

// Queued returns how many prompts wait in the chat's queue.
func (t *Desk) Queued(chatID agent.ChatID) int {
	n := 0
	t.eachThread(func(th *thread) {
		th.mu.Lock()
		defer th.mu.Unlock()
		for _, q := range th.queue {
			if q.ChatID == chatID {
				n++
			}
		}
	})
	return n
}

// QueueDepth is the number of messages waiting for busy chats, of every platform.
func (t *Desk) QueueDepth() int {
	n := 0
	t.eachThread(func(th *thread) {
		th.mu.Lock()
		n += len(th.queue)
		th.mu.Unlock()
	})
	return n
}

// queueText lists the thread's queue for `queue`.
func (t *Desk) queueText(th *thread) string {
	th.mu.Lock()
	qs := slices.Clone(th.queue)
	th.mu.Unlock()
	if len(qs) == 0 {
		return "Nothing is queued in this thread."
	}
	mention := func(q string) string { return q }
	if s, err := t.surface(th.place.Platform); err == nil {
		mention = s.Mention
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "Queued in this thread (%d), in the order they run:\n", len(qs))
	for i, q := range qs {
		fmt.Fprintf(&sb, "%d. %s: %s", i+1, mention(q.Sender), preview(q.Text))
		var extra []string
		if n := len(q.Images); n > 0 {
			extra = append(extra, plural(n, "image"))
		}
		if n := len(q.Files); n > 0 {
			extra = append(extra, plural(n, "file"))
		}
		if len(extra) > 0 {
			sb.WriteString(" (" + strings.Join(extra, ", ") + ")")
		}
		sb.WriteString("\n")
	}
	sb.WriteString("`now N` stops the running turn and runs message N now; `queue clear` drops them all.")
	return sb.String()
}

// preview is the first line of a queued text, cut to previewRunes, in
// backticks-free quotes.
func preview(text string) string {
	line, _, more := strings.Cut(strings.TrimSpace(text), "\n")
	line = strings.ReplaceAll(line, "`", "'")
	if utf8.RuneCountInString(line) > previewRunes {
		r := []rune(line)
		line, more = string(r[:previewRunes]), true
	}
	if more {
		line += "…"
	}
	if line == "" {
		line = "(no text)"
	}
	return "“" + line + "”"
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// runNow moves the queued prompt id to the head of the thread's queue and
// stops the chat's running turn, so that it runs next; with nothing running
// it starts at once. It returns what to tell the thread.
func (t *Desk) runNow(ctx context.Context, th *thread, chatID agent.ChatID, id string) (string, error) {
	th.mu.Lock()
	i := slices.IndexFunc(th.queue, func(q QueuedPrompt) bool { return q.ID == id })
	if i < 0 {
		th.mu.Unlock()
		return "That message is no longer queued.", nil
	}
	q := th.queue[i]
	th.queue = slices.Insert(slices.Delete(th.queue, i, i+1), 0, q)
	th.mu.Unlock()
	if err := t.store.QueuePromptFirst(ctx, th.place, id); err != nil {
		t.log.WarnContext(ctx, "move a queued prompt first", logkey.Place, th.place.String(), logkey.QueuedID, id, "err", err)
	}
	if t.bot.Stop(chatID) {
		t.log.InfoContext(ctx, "stopping the turn for a queued prompt", logkey.ChatID, chatID, logkey.QueuedID, id)
		return "Stopping the running turn; the queued message " + preview(q.Text) + " runs next.", nil
	}
	t.drain(ctx, th, chatID)
	return "Nothing was running: the queued message " + preview(q.Text) + " is starting.", nil
}

// queuedAt returns the n-th (1-based) prompt of the thread's queue, or for n
// 0 the newest prompt of sender (the last one when they have none queued).
func (th *thread) queuedAt(n int, sender string) (QueuedPrompt, bool) {
	th.mu.Lock()
	defer th.mu.Unlock()
	if len(th.queue) == 0 || n < 0 || n > len(th.queue) {
		return QueuedPrompt{}, false
	}
	if n > 0 {
		return th.queue[n-1], true
	}
	for i := len(th.queue) - 1; i >= 0; i-- {
		if th.queue[i].Sender == sender {
			return th.queue[i], true
		}
	}
	return th.queue[len(th.queue)-1], true
}

// queued returns the thread's queued prompt id.
func (th *thread) queued(id string) (QueuedPrompt, bool) {
	th.mu.Lock()
	defer th.mu.Unlock()
	i := slices.IndexFunc(th.queue, func(q QueuedPrompt) bool { return q.ID == id })
	if i < 0 {
		return QueuedPrompt{}, false
	}
	return th.queue[i], true
}

// dropOwn forgets sender's queued prompts in the thread, here and in the
// store, and returns how many there were; the others' stay queued.
func (t *Desk) dropOwn(ctx context.Context, th *thread, sender string) int {
	th.mu.Lock()
	var ids []string
	for _, q := range th.queue {
		if q.Sender == sender {
			ids = append(ids, q.ID)
		}
	}
	th.mu.Unlock()
	for _, id := range ids {
		t.unqueue(ctx, th, id)
	}
	return len(ids)
}

// othersQueued reports whether anyone but sender has a prompt queued in the thread.
func (th *thread) othersQueued(sender string) bool {
	th.mu.Lock()
	defer th.mu.Unlock()
	return slices.ContainsFunc(th.queue, func(q QueuedPrompt) bool { return q.Sender != sender })
}

// requesterOnly reports whether u is held to their own turns and queued
// messages at p: the channel has requester_only and u is no admin.
func (t *Desk) requesterOnly(u User, p Place) bool {
	return t.policy.Channel(p).RequesterOnly && !t.policy.IsAdmin(u)
}

// mayStopTurn reports whether u may stop the chat's running turn at p: with
// requester_only only the person who started it (or an admin) may; why is
// the refusal, naming who may. With no turn running here anyone may.
func (t *Desk) mayStopTurn(ctx context.Context, u User, p Place, chatID agent.ChatID) (ok bool, why string) {
	if !t.requesterOnly(u, p) {
		return true, ""
	}
	r, running := t.bot.Active(chatID)
	if !running {
		return true, ""
	}
	by := ""
	if t.opts.RunRequester != nil {
		var err error
		if by, err = t.opts.RunRequester(ctx, r.ID); err != nil {
			t.log.WarnContext(ctx, "read run requester", logkey.RunID, r.ID, "err", err)
		}
	}
	if by != "" && by == u.Qualified() {
		return true, ""
	}
	return false, "In this channel only " + t.personOr(p, by, "the person who started the running turn") + " or an admin may stop the running turn."
}

// mayRunNow reports whether u may run queued prompt q now at p (which stops
// the running turn): with requester_only only its author, who must also be
// the running turn's requester, or an admin; why is the refusal.
func (t *Desk) mayRunNow(ctx context.Context, u User, p Place, chatID agent.ChatID, q QueuedPrompt) (ok bool, why string) {
	if !t.requesterOnly(u, p) {
		return true, ""
	}
	if q.Sender != u.Qualified() {
		return false, "In this channel only " + t.personOr(p, q.Sender, "the person who queued that message") + " or an admin may run it now."
	}
	return t.mayStopTurn(ctx, u, p, chatID)
}

// personOr is the platform's mention of the qualified user id, or unknown
// when there is none.
func (t *Desk) personOr(p Place, qualified, unknown string) string {
	if qualified == "" {
		return unknown
	}
	if s, err := t.surface(p.Platform); err == nil {
		return s.Mention(qualified)
	}
	return qualified
}

// clickRunNow handles the "run this now" button of a Queued notice.
func (t *Desk) clickRunNow(ctx context.Context, th *thread, c Click) error {
	if !t.policy.Allowed(c.User, c.Place, ActRun) {
		return t.refuse(ctx, c.Place, c.User, "You are not allowed to stop runs in this channel.")
	}
	id := strings.TrimPrefix(c.Button, ButtonRunNowPrefix)
	if q, ok := th.queued(id); ok {
		if ok, why := t.mayRunNow(ctx, c.User, c.Place, c.Ref.ChatID, q); !ok {
			return t.refuse(ctx, c.Place, c.User, why)
		}
	}
	msg, err := t.runNow(ctx, th, c.Ref.ChatID, id)
	if err != nil {
		return err
	}
	return t.notice(ctx, c.Place, msg)
}
