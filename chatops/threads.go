// threads.go: chats bound to platform threads. A front-end hands Desk what
// people did (messages, button clicks, modal answers, slash commands); Desk
// checks access, binds threads to chats, runs commands, queues prompts of busy
// chats and renders each run into the thread through the front-end's Surface.

package chatops

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/agentcore/prompt"
	"github.com/threadline-bot/threadline/chatops/outbox"
)

// DeskOptions configure Desk.
type DeskOptions struct {
	// DefaultAgent is the agent of new chats where the channel names none.
	DefaultAgent string
	// Workdir is the parent of the working directories of chats whose channel
	// sets no workdir: each gets <Workdir>/<chat id>.
	Workdir string
	Render  RenderOptions
	Budget  Budget
	// Limiter, when set, is the rate budget the workspaces' outboxes share
	// with other replicas (store.RateLimits on Postgres); nil keeps each
	// outbox within its own buckets, with no call to ask first.
	Limiter Limiter
	// Stream uses a Surface's native streaming where it has one.
	Stream bool
	// IdleFollow is how long a thread's renderer waits for a next run before
	// it stops (default 30 s).
	IdleFollow time.Duration
	// MaxFileBytes bounds an attached file (default 20 MiB).
	MaxFileBytes int
	// Redact, when set, scrubs every text posted to a platform (configured
	// secrets, project secrets) before it leaves the process.
	Redact Redactor
	// Projects, when set, holds the projects' access lists: a chat is bound
	// to a project (`project P`, a channel's default project) only where the
	// project allows it, and only to a project that exists.
	Projects Projects
	// ContextBytes bounds the thread context a prompt carries (the earlier
	// messages of the thread, or those said meanwhile); default
	// DefaultContextBytes.
	ContextBytes int
	// RunRequester returns who started a run (platform-qualified), for
	// channels with requester_only; nil (or an error) lets only admins
	// answer there.
	RunRequester func(ctx context.Context, runID agent.RunID) (string, error)
}

// Desk is the platform-neutral front desk of the chat platforms.
type Desk struct {
	bot    *Chats
	store  Store
	policy *Policy
	opts   DeskOptions
	log    *slog.Logger

	base   context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	panics atomic.Int64

	mu       sync.Mutex
	surfaces map[string]Surface
	// raw are the surfaces as attached, without redaction: files the
	// thread tools checked go up byte for byte (toolthread.go).
	raw map[string]Surface
	// partLimits are the attached platforms' own PartLimit (PartLimiter).
	partLimits map[string]int
	outboxes   map[string]*outbox.Outbox
	threads    map[Place]*thread
	// readers are the attached platforms' ThreadReaders; marks the time of
	// the bot's last prompt in each thread (threadcontext.go).
	readers map[string]ThreadReader
	marks   map[Place]time.Time
}

// NewDesk returns Desk over the bot. Call Close to stop its goroutines.
func NewDesk(bot *Chats, st Store, policy *Policy, opts DeskOptions, logger *slog.Logger) *Desk {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if policy == nil {
		policy = &Policy{}
	}
	if opts.IdleFollow <= 0 {
		opts.IdleFollow = 30 * time.Second
	}
	if opts.MaxFileBytes <= 0 {
		opts.MaxFileBytes = 20 << 20
	}
	opts.Render = opts.Render.WithDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	return &Desk{
		bot: bot, store: st, policy: policy, opts: opts, log: logger,
		base: ctx, cancel: cancel,
		surfaces: map[string]Surface{}, raw: map[string]Surface{}, partLimits: map[string]int{}, outboxes: map[string]*outbox.Outbox{}, threads: map[Place]*thread{},
		readers: map[string]ThreadReader{}, marks: map[Place]time.Time{},
	}
}

// Close stops the renderers and outboxes and waits for them.
func (t *Desk) Close() error {
	t.cancel()
	t.wg.Wait()
	return nil
}

// Scrub returns s with the configured secrets masked (DeskOptions.Redact),
// for text a front-end posts on its own (a thread title, its home tab).
func (t *Desk) Scrub(s string) string {
	if t.opts.Redact == nil {
		return s
	}
	return t.opts.Redact.String(s)
}

// Policy returns the access policy.
func (t *Desk) Policy() *Policy { return t.policy }

// Attach registers the platform's Surface. Call it before handing Desk
// anything from that platform.
func (t *Desk) Attach(platform string, s Surface) {
	limit := 0
	if pl, ok := s.(PartLimiter); ok {
		limit = pl.PartLimit()
	}
	r, reads := s.(ThreadReader)
	raw := s
	if t.opts.Redact != nil {
		s = redactSurface(s, t.opts.Redact)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.surfaces[platform] = s
	t.raw[platform] = raw
	if reads {
		t.readers[platform] = r
	}
	if limit > 0 {
		t.partLimits[platform] = limit
	}
}

// PartLimiter is an optional Surface capability: the most bytes of answer
// one message of the platform holds (Matrix events hold tens of KB; Slack's
// default of 3,500 applies where a surface does not say).
type PartLimiter interface {
	PartLimit() int
}

// partLimit is the platform's own PartLimit, 0 when it has none.
func (t *Desk) partLimit(platform string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.partLimits[platform]
}

func (t *Desk) surface(platform string) (Surface, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.surfaces[platform]
	if !ok {
		return nil, fmt.Errorf("chatops: no surface attached for %s", platform)
	}
	return s, nil
}

// outbox returns the workspace's outbox, starting it on first use.
func (t *Desk) outbox(p Place) (*outbox.Outbox, error) {
	s, err := t.surface(p.Platform)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	k := p.Platform + "|" + p.Workspace
	o := t.outboxes[k]
	if o == nil {
		var opts []outbox.Option
		if t.opts.Limiter != nil {
			opts = append(opts, outbox.WithLimiter(t.opts.Limiter, k))
		}
		o = outbox.New(s, t.store, t.opts.Budget, t.opts.Stream, t.log.With("workspace", p.Workspace), opts...)
		t.outboxes[k] = o
		t.wg.Go(func() { o.Run(t.base) })
	}
	return o, nil
}

// Stats returns the call counts of a workspace's outbox.
func (t *Desk) Stats(platform, workspace string) OutboxStats {
	t.mu.Lock()
	o := t.outboxes[platform+"|"+workspace]
	t.mu.Unlock()
	if o == nil {
		return OutboxStats{}
	}
	return o.Stats()
}

// FirstSeen records an inbound platform event id (Slack event_id) and reports
// whether it is new: retries and duplicates report false and must be dropped.
func (t *Desk) FirstSeen(ctx context.Context, platform, eventID string) (bool, error) {
	return t.store.FirstSeen(ctx, platform, eventID)
}

// PruneSeen forgets inbound event ids seen before t.
func (t *Desk) PruneSeen(ctx context.Context, before time.Time) (int64, error) {
	return t.store.PruneSeen(ctx, before)
}

// File is a file attached to a message.
type File struct {
	Name      string
	MediaType string
	Data      []byte
}

// Message is something a person wrote where the bot can see it.
type Message struct {
	// Place is the thread; for a top-level message, Thread is its own id.
	Place Place
	// ID is the message's own id.
	ID string
	// Sent is when the platform received the message (Slack ts, Matrix
	// origin_server_ts); zero when unknown. A typed "approve" applies only to
	// a card requested before it.
	Sent time.Time
	User User
	// Text is the message without the bot's mention.
	Text string
	// Mentioned is set when the message mentions the bot; Direct for a
	// direct message.
	Mentioned, Direct bool
	Files             []File
	// Fetch, when set, fetches the message's files; the desk calls it in the
	// thread's actor, only for a message it acts on from a user allowed
	// there, and adds what it returns to Files.
	Fetch func(ctx context.Context) []File
}

// HandleMessage hands the message to its thread's actor and waits for it to
// be handled (front-ends Put and forget): a command, a prompt (run now or
// queued), or nothing when the bot was not addressed. Problems are told in
// the thread in plain words; the error is for logging.
func (t *Desk) HandleMessage(ctx context.Context, m Message) error {
	return t.call(ctx, m.Place, m.User, "message", func(ctx context.Context, th *thread) error { return t.handleMessage(ctx, th, m) })
}

// binding returns the thread's binding, from the actor's memory once known.
func (t *Desk) binding(ctx context.Context, th *thread) (Binding, bool, error) {
	if th.binding != nil {
		return *th.binding, true, nil
	}
	b, ok, err := t.store.Binding(ctx, th.place)
	if ok && err == nil {
		th.binding = &b
	}
	return b, ok, err
}

// handleMessage is HandleMessage in the thread's actor.
func (t *Desk) handleMessage(ctx context.Context, th *thread, m Message) error {
	addressed := m.Mentioned || m.Direct
	b, bound, err := t.binding(ctx, th)
	if err != nil {
		return t.fail(ctx, m.Place, "I could not read this thread's chat", err)
	}
	rules := t.policy.Channel(m.Place)
	if !addressed && !(bound && rules.ReplyWithoutMention) {
		return nil
	}
	if !t.policy.Allowed(m.User, m.Place, ActRun) {
		if !addressed {
			return nil
		}
		return t.refuse(ctx, m.Place, m.User, "You are not allowed to use the bot in this channel; an admin can add you to its allow list.")
	}
	if m.Fetch != nil {
		m.Files = append(m.Files, m.Fetch(ctx)...)
	}
	text := strings.TrimSpace(m.Text)
	cmd, isCmd := ParseThreadCommand(text)
	if !bound {
		if isCmd {
			if res, ok := t.unboundReply(ctx, cmd); ok {
				return t.notice(ctx, m.Place, res)
			}
		}
		if b, err = t.bind(ctx, th, m.User, rules); err != nil {
			return t.fail(ctx, m.Place, "I could not start a chat for this thread", err)
		}
	}
	if isCmd {
		return t.threadCommand(ctx, th, m, b, !bound, cmd)
	}
	if d, ok := typedDecision(text); ok && len(m.Files) == 0 {
		if handled, err := t.handleTypedDecision(ctx, th, m, b, d); handled {
			return err
		}
	}
	if text == "" && len(m.Files) == 0 {
		return t.notice(ctx, m.Place, "Yes? Write your request after the mention ("+"`help`"+" lists the commands).")
	}
	prompt, images, saved, skipped, err := t.attach(ctx, b.ChatID, text, m.Files)
	if err != nil {
		return t.fail(ctx, m.Place, "I could not read this chat", err)
	}
	if len(skipped) > 0 {
		if err := t.notice(ctx, m.Place, "I skipped "+strings.Join(skipped, "; ")+". The rest of the message goes to the agent."); err != nil {
			t.log.WarnContext(ctx, "post skipped files notice", "err", err)
		}
	}
	if prompt == "" && len(images) == 0 {
		return nil
	}
	return t.send(ctx, th, b, promptOrigin{id: m.ID, sent: m.Sent, fresh: !bound}, m, prompt, images, saved)
}

// bind returns the thread's chat, creating it with the channel's defaults.
// It runs in the thread's actor, so one thread never gets two chats; the
// store's Bind keeps the first binding where processes race.
func (t *Desk) bind(ctx context.Context, th *thread, u User, rules Rules) (Binding, error) {
	p := th.place
	if b, ok, err := t.binding(ctx, th); err != nil || ok {
		return b, err
	}
	if rules.Project != "" {
		if msg := t.projectRefusal(ctx, p, u, rules, rules.Project); msg != "" {
			return Binding{}, &refusedError{"this channel's default project: " + msg}
		}
	}
	c, err := t.newChat(ctx, rules, nil)
	if err != nil {
		return Binding{}, err
	}
	b, _, err := t.store.Bind(ctx, Binding{Place: p, ChatID: c.ID, CreatedBy: u.Qualified()})
	if err != nil {
		return Binding{}, err
	}
	th.binding = &b
	t.log.InfoContext(ctx, "thread bound", logkey.Place, p.String(), logkey.ChatID, b.ChatID, "by", u.Qualified())
	return b, nil
}

// newChat creates a chat with the rules' defaults, or a copy of from's
// settings.
func (t *Desk) newChat(ctx context.Context, rules Rules, from *Chat) (Chat, error) {
	c := Chat{ID: agent.ChatID(uuid.NewString()), Agent: rules.Agent, Model: rules.Model, Project: rules.Project, Cwd: rules.Workdir}
	if c.Agent == "" {
		c.Agent = t.opts.DefaultAgent
	}
	if from != nil {
		c = Chat{ID: c.ID, Agent: from.Agent, Model: from.Model, Effort: from.Effort, Mode: from.Mode, Project: from.Project, Cwd: from.Cwd}
	}
	if c.Cwd == "" && t.opts.Workdir != "" {
		c.Cwd = filepath.Join(t.opts.Workdir, string(c.ID))
	}
	if c.Cwd != "" {
		if err := os.MkdirAll(c.Cwd, 0o750); err != nil {
			return Chat{}, fmt.Errorf("working directory: %w", err)
		}
	}
	return t.bot.NewChat(ctx, c)
}

// attach saves files into the chat's working directory and returns the
// prompt naming them, the images, the saved names and what was skipped (for
// a note in the thread): a file with an unusable name, one too large, one that could not
// be saved. A skipped file never stops the rest of the message, and no note
// holds a server path or an unusable name.
func (t *Desk) attach(ctx context.Context, chatID agent.ChatID, text string, files []File) (string, []agent.Image, []string, []string, error) {
	if len(files) == 0 {
		return text, nil, nil, nil, nil
	}
	var (
		images  []agent.Image
		saved   []string
		skipped []string
	)
	c, err := t.bot.Chat(ctx, chatID)
	if err != nil {
		return "", nil, nil, nil, err
	}
	for _, f := range files {
		if why := badFileName(f.Name); why != "" {
			skipped = append(skipped, "a file whose name "+why)
			continue
		}
		if len(f.Data) > t.opts.MaxFileBytes {
			skipped = append(skipped, fmt.Sprintf("%s (larger than %d bytes)", shownName(f.Name), t.opts.MaxFileBytes))
			continue
		}
		if strings.HasPrefix(f.MediaType, "image/") {
			images = append(images, agent.Image{MediaType: f.MediaType, Data: f.Data, Name: f.Name})
			continue
		}
		if c.Cwd == "" {
			skipped = append(skipped, shownName(f.Name)+" (this chat has no working directory for files)")
			continue
		}
		name, err := t.saveWorkFile(c.Cwd, f)
		if err != nil {
			t.log.ErrorContext(ctx, "save attached file", logkey.ChatID, chatID, "err", err)
			skipped = append(skipped, shownName(f.Name)+" (it could not be saved)")
			continue
		}
		saved = append(saved, name)
	}
	if len(saved) > 0 {
		text += "\n\n(Attached files, saved in the working directory: " + strings.Join(saved, ", ") + ")"
	}
	return strings.TrimSpace(text), images, saved, skipped, nil
}

// maxFileName is the longest file name most file systems take (NAME_MAX).
const maxFileName = 255

// badFileName says why an attached file's name is unusable ("" when it is
// fine; an empty name is saved as "attachment").
func badFileName(name string) string {
	switch {
	case len(name) > maxFileName:
		return fmt.Sprintf("is longer than %d bytes", maxFileName)
	case !utf8.ValidString(name):
		return "is not valid UTF-8"
	case strings.ContainsFunc(name, unicode.IsControl):
		return "holds a control character"
	case strings.ContainsAny(name, `/\`):
		return "holds a path separator"
	case strings.Contains(name, ".."):
		return `holds ".."`
	}
	return ""
}

// shownName is a file name as a note may show it: in backticks when it is
// short and made of plain characters, else "a file".
func shownName(name string) string {
	if name == "" || len(name) > 80 || strings.ContainsFunc(name, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("._- ()", r)
	}) {
		return "a file"
	}
	return "`" + name + "`"
}

// saveFile writes f into dir under a safe, unused name and returns the name.
func saveFile(dir string, f File) (string, error) {
	base := filepath.Base(filepath.Clean("/" + f.Name))
	base = strings.TrimLeft(base, ".")
	if base == "" || base == "/" {
		base = "attachment"
	}
	ext := filepath.Ext(base)
	stem := strings.TrimSuffix(base, ext)
	name := base
	for i := 2; ; i++ {
		fh, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
		if errors.Is(err, os.ErrExist) {
			name = fmt.Sprintf("%s-%d%s", stem, i, ext)
			continue
		}
		if err != nil {
			return "", err
		}
		_, werr := fh.Write(f.Data)
		if cerr := fh.Close(); werr == nil {
			werr = cerr
		}
		return name, werr
	}
}

// branch starts a new thread in the channel with a new chat (new) or a fork
// of this one (fork: the agent's native session forks where it can).
func (t *Desk) branch(ctx context.Context, m Message, b Binding, fork bool) error {
	s, err := t.surface(m.Place.Platform)
	if err != nil {
		return err
	}
	from, err := t.bot.Chat(ctx, b.ChatID)
	if err != nil {
		return t.fail(ctx, m.Place, "I could not read this chat", err)
	}
	var c Chat
	if fork {
		c, err = t.bot.Fork(ctx, from.ID)
	} else {
		c, err = t.newChat(ctx, t.policy.Channel(m.Place), &from)
	}
	if err != nil {
		return t.fail(ctx, m.Place, "I could not create the chat", err)
	}
	word := "New chat"
	if fork {
		word = "Fork of the chat in " + m.Place.Thread
	}
	top := m.Place
	top.Thread = ""
	id, err := s.Post(ctx, top, View{Body: fmt.Sprintf("%s (%s · %s), started by %s. Reply in this thread.",
		word, c.Agent, orDefault(c.Model), s.Mention(m.User.Qualified()))})
	if err != nil {
		return t.fail(ctx, m.Place, "I could not post the new thread", err)
	}
	np := m.Place
	np.Thread = id
	if _, _, err := t.store.Bind(ctx, Binding{Place: np, ChatID: c.ID, CreatedBy: m.User.Qualified()}); err != nil {
		return t.fail(ctx, m.Place, "I could not bind the new thread", err)
	}
	return t.notice(ctx, m.Place, word+" started in a new thread.")
}

// Click is a button press.
type Click struct {
	Place Place
	User  User
	// Button is the button's id, Ref its decoded value.
	Button string
	Ref    Ref
}

// Answer is a question's free-text answer (a submitted modal).
type Answer struct {
	Place   Place
	User    User
	Ref     Ref
	Answers map[string]string
}

// HandleClick hands a button press to its thread's actor and waits for it
// to be handled. A user who may not do it gets an ephemeral refusal and the
// error wraps ErrForbidden.
func (t *Desk) HandleClick(ctx context.Context, c Click) error {
	return t.call(ctx, c.Place, c.User, "click", func(ctx context.Context, th *thread) error { return t.handleClick(ctx, th, c) })
}

// handleClick is HandleClick in the thread's actor.
func (t *Desk) handleClick(ctx context.Context, th *thread, c Click) error {
	if err := t.checkRef(ctx, th, c.Ref); err != nil {
		return err
	}
	if c.Button == ButtonStop {
		if !t.policy.Allowed(c.User, c.Place, ActRun) && !t.policy.Allowed(c.User, c.Place, ActApprove) {
			return t.refuse(ctx, c.Place, c.User, "You are not allowed to stop runs in this channel.")
		}
		if ok, why := t.mayStopTurn(ctx, c.User, c.Place, c.Ref.ChatID); !ok {
			return t.refuse(ctx, c.Place, c.User, why)
		}
		if t.bot.Stop(c.Ref.ChatID) {
			return nil
		}
		return t.ephemeral(ctx, c.Place, c.User, "That run has already ended.")
	}
	if strings.HasPrefix(c.Button, ButtonRunNowPrefix) {
		return t.clickRunNow(ctx, th, c)
	}
	if strings.HasPrefix(c.Button, ButtonShipPrefix) {
		return t.clickShip(ctx, th, c)
	}
	if ok, why := t.mayAnswerRun(ctx, c.User, c.Place, c.Ref.RunID); !ok {
		return t.refuse(ctx, c.Place, c.User, why)
	}
	resp := agent.InteractionResponse{InteractionID: string(c.Ref.InteractionID), Decision: c.Ref.Decision, By: c.User.Qualified()}
	if c.Ref.QuestionID != "" {
		resp.Answers = map[string]string{c.Ref.QuestionID: c.Ref.Answer}
	}
	return t.respond(ctx, c.Place, c.User, c.Ref, resp)
}

// MayAnswer reports whether the user may answer interactions at the place (a
// front-end asks before opening a modal).
func (t *Desk) MayAnswer(u User, p Place) bool { return t.policy.Allowed(u, p, ActApprove) }

// HandleAnswer hands a question's free-text answers to the thread's actor
// and waits for them to be routed. Free text answers questions only: for an
// approval it is refused (the user is told to decide with a button or
// approve / deny), here when the request is known and by the prompt service
// (prompt.ErrAnswerKind) in any case.
func (t *Desk) HandleAnswer(ctx context.Context, a Answer) error {
	return t.call(ctx, a.Place, a.User, "answer", func(ctx context.Context, th *thread) error { return t.handleAnswer(ctx, th, a) })
}

// handleAnswer is HandleAnswer in the thread's actor.
func (t *Desk) handleAnswer(ctx context.Context, th *thread, a Answer) error {
	if err := t.checkRef(ctx, th, a.Ref); err != nil {
		return err
	}
	if ok, why := t.mayAnswerRun(ctx, a.User, a.Place, a.Ref.RunID); !ok {
		return t.refuse(ctx, a.Place, a.User, why)
	}
	if in, known := th.pendingInteraction(a.Ref); known && !in.Accepts(agent.DecisionAnswer) {
		_ = t.ephemeral(ctx, a.Place, a.User, needsDecision)
		return fmt.Errorf("chatops: answer %s: %w: free text for a %s request", a.Ref.InteractionID, prompt.ErrAnswerKind, in.Kind)
	}
	resp := agent.InteractionResponse{InteractionID: string(a.Ref.InteractionID), Decision: agent.DecisionAnswer, Answers: a.Answers, By: a.User.Qualified()}
	if qs, err := t.Questions(ctx, a.Ref); err == nil {
		for _, q := range qs {
			resp.Secret = resp.Secret || q.Secret
		}
	}
	return t.respond(ctx, a.Place, a.User, a.Ref, resp)
}

// notRecorded tells a user that an answer given while the database was
// away did nothing.
const notRecorded = "Your answer could not be recorded (the database is unreachable), so nothing was sent to the agent. The request is still waiting: answer again in a moment."

// needsDecision tells a user that an approval takes an explicit decision.
const needsDecision = "This request needs a decision: press Approve, Approve for session or Decline on the card, or reply to it with `approve`, `approve for session` or `deny`."

func (t *Desk) respond(ctx context.Context, p Place, u User, ref Ref, resp agent.InteractionResponse) error {
	err := t.bot.Respond(ctx, ref.ChatID, ref.RunID, resp)
	if err != nil {
		msg := "That request is no longer waiting for an answer."
		if detail, ok := prompt.NotAnOptionDetail(err); ok {
			msg = notAnOption(detail)
		} else if errors.Is(err, prompt.ErrNotRecorded) {
			msg = notRecorded
		} else if errors.Is(err, prompt.ErrAnswerKind) {
			msg = needsDecision
			if resp.Decision != agent.DecisionAnswer {
				msg = "That request does not take this answer: use the buttons on its card."
			}
		}
		_ = t.ephemeral(ctx, p, u, msg)
		return fmt.Errorf("chatops: answer %s: %w", ref.InteractionID, err)
	}
	return nil
}

// notAnOption tells a user that a question takes only its options (detail
// names them, from prompt.NotAnOptionDetail) and is still waiting.
func notAnOption(detail string) string {
	if detail == "" {
		return "That answer is not one of the question's options, so it was not sent; the question is still waiting: answer with one of its options (its text or its number)."
	}
	return "That answer was not sent: " + detail + ". The question is still waiting: answer with one of its options (its text or its number)."
}

// pendingInteraction returns the pending interaction a ref names, when this
// process follows its run in the thread.
func (th *thread) pendingInteraction(ref Ref) (agent.Interaction, bool) {
	th.mu.Lock()
	defer th.mu.Unlock()
	in, ok := th.pending[cardKey{ref.RunID, ref.InteractionID}]
	if !ok {
		return agent.Interaction{}, false
	}
	return *in, true
}

// checkRef makes sure the button belongs to the thread it was pressed in.
func (t *Desk) checkRef(ctx context.Context, th *thread, ref Ref) error {
	p := th.place
	b, ok, err := t.binding(ctx, th)
	if err != nil {
		return err
	}
	if !ok || b.ChatID != ref.ChatID {
		return fmt.Errorf("%w: the button's chat %s is not bound to %s", ErrForbidden, ref.ChatID, p)
	}
	return nil
}

// SlashCommand is a slash command (/threadline ...) in a channel, outside threads.
type SlashCommand struct {
	Place Place // Thread empty
	User  User
	Text  string
}

// HandleSlash hands a slash command to its channel's actor, waits for it and
// returns the (ephemeral) reply. Plain text, or "new <text>", starts a new
// thread with that prompt.
func (t *Desk) HandleSlash(ctx context.Context, sc SlashCommand) (string, error) {
	var reply string
	err := t.call(ctx, sc.Place, sc.User, "slash command", func(ctx context.Context, _ *thread) error {
		var err error
		reply, err = t.handleSlash(ctx, sc)
		return err
	})
	return reply, err
}

// handleSlash is HandleSlash in the channel's actor. The new thread is bound
// and its prompt sent by that thread's own actor.
func (t *Desk) handleSlash(ctx context.Context, sc SlashCommand) (string, error) {
	if !t.policy.Allowed(sc.User, sc.Place, ActRun) {
		return "You are not allowed to use the bot in this channel; an admin can add you to its allow list.", fmt.Errorf("%w: %s in %s", ErrForbidden, sc.User.Qualified(), sc.Place)
	}
	text := strings.TrimSpace(sc.Text)
	cmd, isCmd := ParseSlashCommand(text)
	if isCmd && cmd.Name != "new" {
		return t.slashReply(ctx, cmd), nil
	}
	if isCmd {
		text = cmd.Arg
	}
	s, err := t.surface(sc.Place.Platform)
	if err != nil {
		return "", err
	}
	top := sc.Place
	top.Thread = ""
	head := fmt.Sprintf("%s asked: %s", s.Mention(sc.User.Qualified()), text)
	if text == "" {
		head = fmt.Sprintf("New chat started by %s. Mention me in this thread.", s.Mention(sc.User.Qualified()))
	}
	id, err := s.Post(ctx, top, View{Body: head})
	if err != nil {
		return "I could not post in this channel: " + err.Error(), err
	}
	p := sc.Place
	p.Thread = id
	// The actor may still run f after call gave up on ctx: bound is shared.
	var bound atomic.Bool
	err = t.call(ctx, p, sc.User, "slash prompt", func(ctx context.Context, th *thread) error {
		b, err := t.bind(ctx, th, sc.User, t.policy.Channel(p))
		if err != nil {
			return err
		}
		bound.Store(true)
		if text == "" {
			return nil
		}
		return t.send(ctx, th, b, promptOrigin{}, Message{Place: p, User: sc.User, Text: text}, text, nil, nil)
	})
	if !bound.Load() {
		return "I could not start a chat.", err
	}
	return "Started a new chat thread.", err
}

// notice posts text in the thread.
func (t *Desk) notice(ctx context.Context, p Place, text string) error {
	s, err := t.surface(p.Platform)
	if err != nil {
		return err
	}
	_, err = s.Post(ctx, p, View{Body: text})
	return err
}

func (t *Desk) ephemeral(ctx context.Context, p Place, u User, text string) error {
	s, err := t.surface(p.Platform)
	if err != nil {
		return err
	}
	return s.Ephemeral(ctx, p, u, text)
}

func (t *Desk) refuse(ctx context.Context, p Place, u User, text string) error {
	if err := t.ephemeral(ctx, p, u, text); err != nil {
		t.log.WarnContext(ctx, "send refusal", "err", err)
	}
	return fmt.Errorf("%w: %s at %s", ErrForbidden, u.Qualified(), p)
}

// fail tells the thread what went wrong in plain words and returns err.
func (t *Desk) fail(ctx context.Context, p Place, what string, err error) error {
	msg := what + ": " + plainError(err)
	if perr := t.notice(ctx, p, msg); perr != nil {
		t.log.WarnContext(ctx, "post failure notice", "err", perr)
	}
	return fmt.Errorf("chatops: %s: %w", what, err)
}

// refusedError is a refusal whose message is told to the user as is.
type refusedError struct{ msg string }

func (e *refusedError) Error() string { return e.msg }
func (e *refusedError) Unwrap() error { return ErrForbidden }

func plainError(err error) string {
	var refused *refusedError
	if errors.As(err, &refused) {
		return refused.msg
	}
	switch {
	case errors.Is(err, agent.ErrNotInstalled):
		return "the agent's CLI is not installed on the bot's host. " + err.Error()
	case errors.Is(err, ErrRateLimited):
		return "the chat platform is rate limiting me; try again in a minute."
	case errors.Is(err, context.DeadlineExceeded):
		return "it took too long."
	}
	return err.Error()
}
