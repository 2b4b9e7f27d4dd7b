// assistant.go: Slack's AI app surface. An assistant thread (the split view)
// gets the configured suggested prompts when it starts and a title from its
// first prompt, and is a chat like any thread. The App Home tab shows each
// person their recent chats and their running runs, with links, read from the
// store (so the same after a restart) and published again (views.publish,
// debounced, within Tier 4) when the tab is opened and as runs start and end.

package slack

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/render"
)

// AssistantConfig is the slack.assistant section: Slack's assistant threads.
type AssistantConfig struct {
	// PromptsTitle heads the suggested prompts (Slack shows "Try these
	// prompts:" without one).
	PromptsTitle string `yaml:"prompts_title"`
	// Prompts are offered when a person opens an assistant thread (at most
	// four); none offers nothing.
	Prompts []SuggestedPrompt `yaml:"suggested_prompts"`
}

// SuggestedPrompt is one suggested prompt: Title is shown, Message is sent
// when it is picked.
type SuggestedPrompt struct {
	Title   string `yaml:"title"`
	Message string `yaml:"message"`
}

// Bounds of the App Home tab.
const (
	homeRecent = 10 // threads listed per person
	// homeViewers bounds the people published again when a thread's run
	// starts or ends (those who started runs there, the most recent first).
	homeViewers  = 20
	homePeople   = 5000
	homeDebounce = 2 * time.Second
	// homeRetries bounds the publishes put off while the store still shows
	// as running a run whose end the thread already showed.
	homeRetries = 5
	// views.publish is Tier 4 (100 a minute per workspace).
	homePerMinute = 95
	maxTitle      = 80
)

// homeDesk is what the App Home reads: each person's threads from the
// store, and scrubbing (*chatops.Desk).
type homeDesk interface {
	HomeThreads(ctx context.Context, u chatops.User, workspace string, limit int) ([]chatops.HomeThread, error)
	HomeViewers(ctx context.Context, p chatops.Place, limit int) ([]chatops.User, error)
	Scrub(s string) string
}

// homeKey is one person's home tab: their user id in a workspace.
type homeKey struct{ team, user string }

// seenRun is what a thread's messages last showed of its run.
type seenRun struct {
	running bool
	at      time.Time
}

// home publishes the App Home tabs. What a tab lists comes from the store
// (homeDesk.HomeThreads), so it is the same after a restart; the home only
// remembers what the threads last showed, to publish again when a run starts
// or ends there.
type home struct {
	api     *slack.Client
	desk    homeDesk
	log     *slog.Logger
	enabled bool

	mu       sync.Mutex
	url      string                    // the workspace's web address (auth.test)
	runs     map[chatops.Place]seenRun // what each thread last showed
	pending  map[homeKey]bool          // tabs whose publish is scheduled
	threads  map[chatops.Place]bool    // assistant threads not titled yet
	tokens   float64
	tokensAt time.Time
	wg       *sync.WaitGroup
	base     context.Context
}

func newHome(api *slack.Client, desk homeDesk, log *slog.Logger, enabled bool, wg *sync.WaitGroup, base context.Context) *home {
	return &home{api: api, desk: desk, log: log, enabled: enabled, runs: map[chatops.Place]seenRun{},
		pending: map[homeKey]bool{}, threads: map[chatops.Place]bool{}, tokens: 10, tokensAt: time.Now(), wg: wg, base: base}
}

// prompted notes that user asked in the thread at p: the first prompt of an
// assistant thread becomes its title.
func (h *home) prompted(ctx context.Context, p chatops.Place, text string) {
	title := oneLineTitle(text)
	h.mu.Lock()
	titleIt := h.threads[p]
	delete(h.threads, p)
	h.mu.Unlock()
	if titleIt && title != "" {
		// Off the thread's actor: the title is not worth holding it up.
		h.wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			err := h.api.SetAssistantThreadsTitleContext(ctx, slack.AssistantThreadsSetTitleParameters{ChannelID: p.Channel, ThreadTS: p.Thread, Title: title})
			if err != nil {
				h.log.WarnContext(ctx, "set the assistant thread's title", logkey.Channel, p.Channel, "err", err)
			}
		})
	}
}

func oneLineTitle(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return clip(s, maxTitle)
}

// observe follows what a thread's answer shows: a Stop button means a run is
// live there, a footer that it ended. When that changes, the tabs of the
// people who started runs in the thread are published again.
func (h *home) observe(p chatops.Place, v chatops.View) {
	if h == nil || !h.enabled {
		return
	}
	running := false
	for _, b := range v.Buttons {
		if b.ID == render.ButtonStop {
			running = true
		}
	}
	if !running && v.Footer == "" {
		return
	}
	h.mu.Lock()
	if was, ok := h.runs[p]; ok && was.running == running {
		h.mu.Unlock()
		return
	}
	if len(h.runs) >= homePeople {
		clear(h.runs)
	}
	h.runs[p] = seenRun{running: running, at: time.Now()}
	h.mu.Unlock()
	// Off the caller (the workspace's outbox): who to publish is a query.
	h.wg.Go(func() {
		ctx, cancel := context.WithTimeout(h.base, 30*time.Second)
		defer cancel()
		users, err := h.desk.HomeViewers(ctx, p, homeViewers)
		if err != nil {
			if ctx.Err() == nil {
				h.log.WarnContext(ctx, "read whose app home lists a thread", logkey.Channel, p.Channel, "err", err)
			}
			return
		}
		for _, u := range users {
			h.schedule(homeKey{team: p.Workspace, user: u.ID})
		}
	})
}

// schedule publishes a home tab soon, once for every change within
// homeDebounce, within views.publish's tier.
func (h *home) schedule(k homeKey) { h.scheduleIn(k, homeDebounce, 0) }

// scheduleIn publishes k's tab after delay (unless one is pending); try
// counts the publishes put off so far.
func (h *home) scheduleIn(k homeKey, delay time.Duration, try int) {
	h.mu.Lock()
	if h.pending[k] {
		h.mu.Unlock()
		return
	}
	h.pending[k] = true
	h.mu.Unlock()
	h.wg.Go(func() {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-h.base.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(h.base, 30*time.Second)
		defer cancel()
		h.publish(ctx, k, try)
	})
}

// take waits for a views.publish token; false when ctx ended.
func (h *home) take(ctx context.Context) bool {
	for {
		h.mu.Lock()
		now := time.Now()
		h.tokens = min(10, h.tokens+now.Sub(h.tokensAt).Minutes()*homePerMinute)
		h.tokensAt = now
		if h.tokens >= 1 {
			h.tokens--
			h.mu.Unlock()
			return true
		}
		wait := time.Duration((1 - h.tokens) / homePerMinute * float64(time.Minute))
		h.mu.Unlock()
		select {
		case <-ctx.Done():
			return false
		case <-time.After(wait):
		}
	}
}

// publish shows k's home tab now, built from the store. While the store
// still shows as running a run whose thread already showed its end (the run
// is recorded finished just after its last event), it is put off a little.
func (h *home) publish(ctx context.Context, k homeKey, try int) {
	h.mu.Lock()
	delete(h.pending, k)
	h.mu.Unlock()
	list, err := h.desk.HomeThreads(ctx, chatops.User{Platform: Platform, ID: k.user}, k.team, homeRecent)
	if err != nil {
		if ctx.Err() == nil {
			h.log.WarnContext(ctx, "read the app home's threads", logkey.User, k.user, "err", err)
		}
		return
	}
	if try < homeRetries && h.behind(list) {
		h.scheduleIn(k, homeDebounce/4, try+1)
		return
	}
	view := h.view(list)
	if !h.take(ctx) {
		return
	}
	if _, err := h.api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: k.user, View: view}); err != nil {
		h.log.WarnContext(ctx, "publish the app home", logkey.User, k.user, "err", err)
	}
}

// behind reports whether the list shows a run as running whose thread
// showed its end after it started.
func (h *home) behind(list []chatops.HomeThread) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range list {
		if s, ok := h.runs[t.Place]; ok && t.Running() && !s.running && s.at.After(t.Started) {
			return true
		}
	}
	return false
}

// view is a home tab listing the threads (running ones first).
func (h *home) view(list []chatops.HomeThread) slack.HomeTabViewRequest {
	md := func(s string) *slack.TextBlockObject {
		return slack.NewTextBlockObject(slack.MarkdownType, s, false, false)
	}
	h.mu.Lock()
	base := h.url
	h.mu.Unlock()
	blocks := []slack.Block{slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, "Threadline", false, false))}
	var running, recent []string
	for _, c := range list {
		title := oneLineTitle(h.desk.Scrub(c.Title))
		line := fmt.Sprintf("<%s|%s>", threadLink(base, c.Place), escapeLabel(cmpOr(title, "a chat")))
		switch last := runEnd(c); {
		case c.Running():
			running = append(running, "⏳ "+line)
		case last != "":
			recent = append(recent, "• "+line+" · "+escapeText(last))
		default:
			recent = append(recent, "• "+line)
		}
	}
	if len(running) > 0 {
		blocks = append(blocks, slack.NewSectionBlock(md("*Running now*\n"+clip(strings.Join(running, "\n"), maxSectionText-20)), nil, nil))
	}
	if len(recent) > 0 {
		blocks = append(blocks, slack.NewSectionBlock(md("*Your recent chats*\n"+clip(strings.Join(recent, "\n"), maxSectionText-30)), nil, nil))
	}
	if len(running)+len(recent) == 0 {
		blocks = append(blocks, slack.NewSectionBlock(md("Mention me in a channel or write to me here to start a chat."), nil, nil))
	}
	return slack.HomeTabViewRequest{Type: slack.VTHomeTab, Blocks: slack.Blocks{BlockSet: blocks}}
}

// runEnd says how the thread's latest run ended, as its footer begins
// ("Done in 12s", "Stopped after 3s", "Failed after 1m05s"); "" while it
// runs.
func runEnd(t chatops.HomeThread) string {
	d := ""
	if !t.Ended.IsZero() && !t.Started.IsZero() {
		d = fmtDuration(t.Ended.Sub(t.Started))
	}
	word := map[string][2]string{"completed": {"Done", " in "}, "interrupted": {"Stopped", " after "}, "failed": {"Failed", " after "}}[t.Status]
	switch {
	case word[0] == "":
		return ""
	case d == "":
		return word[0]
	}
	return word[0] + word[1] + d
}

// fmtDuration is a duration as the footer shows it (12s, 3m05s, 1h02m).
func fmtDuration(d time.Duration) string {
	d = max(d.Round(time.Second), 0)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// threadLink is the web address of a thread of the workspace at base.
func threadLink(base string, p chatops.Place) string {
	if base == "" {
		base = "https://slack.com/"
	}
	return fmt.Sprintf("%sarchives/%s/p%s", base, p.Channel, strings.ReplaceAll(p.Thread, ".", ""))
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// onAssistantEvent handles assistant_thread_started (the split view of
// apps installed with assistant_view), app_home_opened (the Home tab, and
// the Messages tab where agent messaging starts chats), app_context_changed
// and assistant_thread_context_changed; false for other events.
func (b *Bot) onAssistantEvent(ev slackevents.EventsAPIEvent) bool {
	team := ev.TeamID
	switch e := ev.InnerEvent.Data.(type) {
	case *slackevents.AssistantThreadStartedEvent:
		if e == nil || e.AssistantThread.ChannelID == "" || e.AssistantThread.ThreadTimeStamp == "" {
			return true
		}
		t := e.AssistantThread
		p := chatops.Place{Platform: Platform, Workspace: team, Channel: t.ChannelID, Thread: t.ThreadTimeStamp}
		b.home.mu.Lock()
		if len(b.home.threads) > homePeople {
			clear(b.home.threads)
		}
		b.home.threads[p] = true
		b.home.mu.Unlock()
		b.suggestPrompts(team, p.Channel, p.Thread, t.UserID)
		return true
	case *slackevents.AppHomeOpenedEvent:
		if e == nil || e.User == "" {
			return true
		}
		switch {
		case e.Tab == "messages" && e.Channel != "":
			// Agent messaging: the Messages tab is where chats start, as
			// assistant_thread_started was in the split view.
			b.suggestPrompts(team, e.Channel, "", e.User)
		case e.Tab == "home" && b.home.enabled:
			b.home.scheduleIn(homeKey{team: team, user: e.User}, 0, 0)
		}
		return true
	case *slackevents.AppContextChangedEvent, *slackevents.AssistantThreadContextChangedEvent:
		// What the person looks at while the app is open (a channel, a
		// canvas): a chat reads its own thread when it runs, so the
		// context is only noted.
		b.log.Debug("slack app context changed", logkey.Type, ev.InnerEvent.Type)
		return true
	}
	return false
}

// suggestPrompts offers the configured suggested prompts in channel (and
// thread, "" for the Messages tab of agent messaging).
func (b *Bot) suggestPrompts(team, channel, thread, user string) {
	if len(b.cfg.Assistant.Prompts) == 0 {
		return
	}
	p := chatops.Place{Platform: Platform, Workspace: team, Channel: channel, Thread: thread}
	w := who{place: p, user: chatops.User{Platform: Platform, ID: user}}
	b.goSafely("suggested prompts", w, func(ctx context.Context) {
		params := slack.AssistantThreadsSetSuggestedPromptsParameters{Title: b.cfg.Assistant.PromptsTitle, ChannelID: p.Channel, ThreadTS: p.Thread}
		for _, sp := range b.cfg.Assistant.Prompts {
			params.AddPrompt(clip(sp.Title, 75), clip(sp.Message, 2000))
		}
		if err := b.api.SetAssistantThreadsSuggestedPromptsContext(ctx, params); err != nil {
			b.log.WarnContext(ctx, "set suggested prompts", logkey.Channel, p.Channel, logkey.Err, err)
		}
	})
}
