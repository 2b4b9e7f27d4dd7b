// assistant.go: Slack's AI app surface. An assistant thread (the split view)
// gets the configured suggested prompts when it starts and a title from its
// first prompt, and is a chat like any thread. The App Home tab shows each
// person their recent chats and their running runs, with links, published
// again (views.publish, debounced) as their runs start and end.

package slack

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
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

// Bounds of the App Home tab and of what the bot remembers for it.
const (
	homeRecent   = 10 // chats listed per person
	homePeople   = 5000
	homeDebounce = 2 * time.Second
	// views.publish is Tier 4 (100 a minute per workspace).
	homePerMinute = 95
	maxTitle      = 80
)

// homeChat is a thread as a person's App Home lists it.
type homeChat struct {
	place   chatops.Place
	title   string
	at      time.Time
	running bool
	// last is the end of the latest run ("Done in 12s", "Stopped …").
	last string
}

// home keeps what the App Home tabs show and publishes them.
type home struct {
	api     *slack.Client
	log     *slog.Logger
	enabled bool

	mu       sync.Mutex
	url      string                     // the workspace's web address (auth.test)
	chats    map[string][]*homeChat     // by user id, newest first
	byPlace  map[chatops.Place][]string // the users whose home lists a place
	pending  map[string]bool            // users whose publish is scheduled
	threads  map[chatops.Place]bool     // assistant threads not titled yet
	tokens   float64
	tokensAt time.Time
	wg       *sync.WaitGroup
	base     context.Context
}

func newHome(api *slack.Client, log *slog.Logger, enabled bool, wg *sync.WaitGroup, base context.Context) *home {
	return &home{api: api, log: log, enabled: enabled, chats: map[string][]*homeChat{}, byPlace: map[chatops.Place][]string{},
		pending: map[string]bool{}, threads: map[chatops.Place]bool{}, tokens: 10, tokensAt: time.Now(), wg: wg, base: base}
}

// prompted notes that user asked in the thread at p: the thread tops their
// recent chats; the first prompt of an assistant thread becomes its title.
func (h *home) prompted(ctx context.Context, p chatops.Place, user, text string) {
	title := oneLineTitle(text)
	h.mu.Lock()
	titleIt := h.threads[p]
	delete(h.threads, p)
	if h.enabled {
		list := h.chats[user]
		var c *homeChat
		for i, x := range list {
			if x.place == p {
				c = x
				list = append(list[:i:i], list[i+1:]...)
				break
			}
		}
		if c == nil {
			c = &homeChat{place: p, title: title}
			h.byPlace[p] = append(h.byPlace[p], user)
		}
		c.at = time.Now()
		list = append([]*homeChat{c}, list...)
		if len(list) > homeRecent {
			for _, old := range list[homeRecent:] {
				h.dropPlace(old.place, user)
			}
			list = list[:homeRecent]
		}
		if len(h.chats) >= homePeople && h.chats[user] == nil {
			clear(h.chats)
			clear(h.byPlace)
		}
		h.chats[user] = list
	}
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

// dropPlace forgets that user's home lists p. h.mu is held.
func (h *home) dropPlace(p chatops.Place, user string) {
	us := h.byPlace[p]
	for i, u := range us {
		if u == user {
			us = append(us[:i:i], us[i+1:]...)
			break
		}
	}
	if len(us) == 0 {
		delete(h.byPlace, p)
	} else {
		h.byPlace[p] = us
	}
}

func oneLineTitle(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return clip(s, maxTitle)
}

// observe follows what a thread's answer shows: a Stop button means a run is
// live there, a footer that it ended. Homes that list the thread are
// published again when that changes.
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
	var changed []string
	for _, u := range h.byPlace[p] {
		for _, c := range h.chats[u] {
			if c.place != p || c.running == running {
				continue
			}
			c.running = running
			if !running {
				c.last = strings.SplitN(v.Footer, " · ", 2)[0]
			}
			changed = append(changed, u)
		}
	}
	h.mu.Unlock()
	for _, u := range changed {
		h.schedule(u)
	}
}

// schedule publishes user's home soon, once for every change within
// homeDebounce, within views.publish's tier.
func (h *home) schedule(user string) { h.scheduleIn(user, homeDebounce) }

// scheduleIn publishes user's home after delay (unless one is pending).
func (h *home) scheduleIn(user string, delay time.Duration) {
	h.mu.Lock()
	if h.pending[user] {
		h.mu.Unlock()
		return
	}
	h.pending[user] = true
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
		h.publish(ctx, user)
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

// publish shows user's home tab now.
func (h *home) publish(ctx context.Context, user string) {
	h.mu.Lock()
	delete(h.pending, user)
	view := h.view(user)
	h.mu.Unlock()
	if !h.take(ctx) {
		return
	}
	if _, err := h.api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: user, View: view}); err != nil {
		h.log.WarnContext(ctx, "publish the app home", logkey.User, user, "err", err)
	}
}

// view is user's home tab. h.mu is held.
func (h *home) view(user string) slack.HomeTabViewRequest {
	list := append([]*homeChat(nil), h.chats[user]...)
	sort.SliceStable(list, func(i, j int) bool { return list[i].running && !list[j].running })
	md := func(s string) *slack.TextBlockObject {
		return slack.NewTextBlockObject(slack.MarkdownType, s, false, false)
	}
	blocks := []slack.Block{slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, "Threadline", false, false))}
	var running, recent []string
	for _, c := range list {
		line := fmt.Sprintf("<%s|%s>", h.link(c.place), escapeText(cmpOr(c.title, "a chat")))
		switch {
		case c.running:
			running = append(running, "⏳ "+line)
		case c.last != "":
			recent = append(recent, "• "+line+" · "+escapeText(c.last))
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

// link is the web address of a thread.
func (h *home) link(p chatops.Place) string {
	base := h.url
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

// onAssistantEvent handles assistant_thread_started and app_home_opened;
// false for other events.
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
		if len(b.cfg.Assistant.Prompts) == 0 {
			return true
		}
		w := who{place: p, user: chatops.User{Platform: Platform, ID: t.UserID}}
		b.goSafely("suggested prompts", w, func(ctx context.Context) {
			params := slack.AssistantThreadsSetSuggestedPromptsParameters{Title: b.cfg.Assistant.PromptsTitle, ChannelID: p.Channel, ThreadTS: p.Thread}
			for _, sp := range b.cfg.Assistant.Prompts {
				params.AddPrompt(clip(sp.Title, 75), clip(sp.Message, 2000))
			}
			if err := b.api.SetAssistantThreadsSuggestedPromptsContext(ctx, params); err != nil {
				b.log.WarnContext(ctx, "set suggested prompts", logkey.Channel, p.Channel, "err", err)
			}
		})
		return true
	case *slackevents.AppHomeOpenedEvent:
		if e == nil || e.User == "" || e.Tab != "home" || !b.home.enabled {
			return true
		}
		b.home.scheduleIn(e.User, 0)
		return true
	}
	return false
}
