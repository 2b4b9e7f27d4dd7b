// bot.go: the Matrix bot: configuration, login (the device is kept across
// restarts), and the /sync loop whose handlers hand events to the chatops
// desk (its per-thread actors keep each thread's order).

package matrix

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/chatops"
)

// Platform is the platform name of Matrix places and users.
const Platform = "matrix"

var (
	// ErrConfig is returned by New for an unusable configuration.
	ErrConfig = errors.New("matrix: bad configuration")
	// ErrEncryptionUnavailable is returned by Run when encryption is
	// configured but the binary was built without the goolm tag (pure-Go
	// Olm): rebuild with `go build -tags goolm`.
	ErrEncryptionUnavailable = errors.New("matrix: end-to-end encryption needs a build with -tags goolm")
	// ErrLogin is returned by Run when the bot cannot log in.
	ErrLogin = errors.New("matrix: login failed")
)

// Config configures the Matrix bot.
type Config struct {
	// Homeserver is the client-server API base URL.
	Homeserver string
	// UserID is the bot's account ("@threadline:example.org").
	UserID string
	// AccessToken logs in as an existing device. When empty, Password is
	// used on first start and the device (id and token) is kept in the
	// database for the next starts.
	AccessToken string
	Password    string
	// DeviceID names the device created by a password login (default
	// THREADLINE_<random>).
	DeviceID string
	// Encryption turns on end-to-end encryption (needs -tags goolm). Keys
	// live in CryptoDB and persist across restarts.
	Encryption bool
	// PickleKey encrypts the Olm account and sessions at rest. Empty: a
	// random key is generated once and kept with the login.
	PickleKey string
	// CryptoDB holds the encryption keys (mautrix's crypto_* and mx_*
	// tables): Threadline's database. CryptoDialect is "postgres" or
	// "sqlite". The bot never closes it.
	CryptoDB      *sql.DB
	CryptoDialect string
	// RecoveryKeyFile keeps the recovery key of the account's cross-signing
	// keys and key backup (mode 0600, created on the first start). Empty:
	// no cross-signing and no key backup.
	RecoveryKeyFile string
	// Workspace is the Place.Workspace of this bot's rooms (default: the
	// server name of UserID).
	Workspace string
	// TypingTimeout is how long one typing notice lasts; it is renewed
	// while a run streams (default 30 s).
	TypingTimeout time.Duration
	// RateLimitWait bounds one wait for a 429 inside a call; longer waits
	// are returned to the renderer (default 30 s).
	RateLimitWait time.Duration
	// HTTPClient is the base HTTP client (default: a new one).
	HTTPClient *http.Client
	// MaxFileBytes bounds one attachment the bot downloads (default
	// DefaultMaxFileBytes); a larger one is skipped with a note.
	MaxFileBytes int64
	// MaxEventBytes bounds one event the bot sends as the homeserver stores
	// it (the content, or its Megolm ciphertext in an encrypted room), from
	// MinEventBytes to MaxEventBytesLimit (default DefaultMaxEventBytes,
	// config key matrix.max_event_bytes). An answer takes one message up to
	// PartLimit(MaxEventBytes) bytes before it continues in the next.
	MaxEventBytes int
}

// DefaultMaxFileBytes is the default bound of one downloaded attachment.
const DefaultMaxFileBytes = 20 << 20

// Desk is the platform-neutral front desk the bot hands events to
// (*chatops.Desk).
type Desk interface {
	Attach(platform string, s chatops.Surface)
	// Put queues the event on its thread's actor; it waits while that
	// thread's queue is full.
	Put(ctx context.Context, in chatops.Inbound) error
	MayAnswer(u chatops.User, p chatops.Place) bool
	Resume(ctx context.Context, platform string) error
	Policy() *chatops.Policy
}

// Accounts keeps the bot's login and /sync position (store.Store).
type Accounts interface {
	MatrixLogin(ctx context.Context, userID string) ([]byte, bool, error)
	SaveMatrixLogin(ctx context.Context, userID string, login []byte) error
	MatrixSync(ctx context.Context, userID string) (nextBatch, filterID string, err error)
	SaveMatrixNextBatch(ctx context.Context, userID, nextBatch string) error
	SaveMatrixFilterID(ctx context.Context, userID, filterID string) error
}

// Seen deduplicates inbound events (store.Store).
type Seen interface {
	FirstSeen(ctx context.Context, platform, eventID string) (bool, error)
}

// Bot is a Matrix front-end of chatops. It implements chatops.Surface.
type Bot struct {
	cfg      Config
	desk     Desk
	accounts Accounts
	seen     Seen
	log      *slog.Logger

	cli         *mautrix.Client
	me          id.UserID
	displayName string
	crypto      mautrix.CryptoHelper

	cards  *cardBook
	polls  *pollBook
	typing *typing
	// threads remembers which thread relation each thread's people write.
	threads threadRels

	wg sync.WaitGroup

	noticeMu  sync.Mutex
	noticedAt map[id.RoomID]time.Time

	limited atomic.Int64
	panics  atomic.Int64
	ready   chan struct{}
}

var _ chatops.Surface = (*Bot)(nil)

// queued is one sync event and its handler.
type queued struct {
	evt *event.Event
	fn  func(context.Context, *event.Event)
}

// login is what the bot keeps of its device between starts.
type login struct {
	DeviceID    id.DeviceID `json:"device_id"`
	AccessToken string      `json:"access_token"`
	PickleKey   string      `json:"pickle_key"`
}

// New checks cfg and returns a Bot; Run connects it.
func New(cfg Config, desk Desk, accounts Accounts, seen Seen, logger *slog.Logger) (*Bot, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	uid := id.UserID(cfg.UserID)
	_, server, err := uid.Parse()
	switch {
	case cfg.Homeserver == "":
		return nil, fmt.Errorf("%w: homeserver is required", ErrConfig)
	case err != nil:
		return nil, fmt.Errorf("%w: user_id %q: %w", ErrConfig, cfg.UserID, err)
	case cfg.AccessToken == "" && cfg.Password == "":
		return nil, fmt.Errorf("%w: access_token or password is required", ErrConfig)
	case desk == nil || accounts == nil:
		return nil, fmt.Errorf("%w: the bot needs chatops and the account store", ErrConfig)
	case cfg.Encryption && cfg.CryptoDB == nil:
		return nil, fmt.Errorf("%w: encryption needs the database for its keys", ErrConfig)
	case cfg.Encryption && cfg.CryptoDialect != "postgres" && cfg.CryptoDialect != "sqlite":
		return nil, fmt.Errorf("%w: crypto database dialect %q (want postgres or sqlite)", ErrConfig, cfg.CryptoDialect)
	case cfg.MaxEventBytes != 0 && (cfg.MaxEventBytes < MinEventBytes || cfg.MaxEventBytes > MaxEventBytesLimit):
		return nil, fmt.Errorf("%w: max_event_bytes %d is outside %d..%d (Matrix refuses events over %d bytes)",
			ErrConfig, cfg.MaxEventBytes, MinEventBytes, MaxEventBytesLimit, HardEventLimit)
	}
	if cfg.MaxEventBytes == 0 {
		cfg.MaxEventBytes = DefaultMaxEventBytes
	}
	if cfg.Workspace == "" {
		cfg.Workspace = server
	}
	if cfg.TypingTimeout <= 0 {
		cfg.TypingTimeout = 30 * time.Second
	}
	if cfg.RateLimitWait <= 0 {
		cfg.RateLimitWait = 30 * time.Second
	}
	if cfg.MaxFileBytes <= 0 {
		cfg.MaxFileBytes = DefaultMaxFileBytes
	}
	b := &Bot{
		cfg: cfg, desk: desk, accounts: accounts, seen: seen, log: logger.With(logkey.Platform, Platform, logkey.UserID, cfg.UserID),
		me: uid, noticedAt: map[id.RoomID]time.Time{},
		ready: make(chan struct{}),
	}
	b.cards = newCardBook()
	b.polls = newPollBook()
	return b, nil
}

// Run logs in, sets up encryption, registers with chatops (resuming the
// rendering of runs a previous process left open) and syncs until ctx ends.
// It returns nil after ctx ends, or the error that stopped it.
func (b *Bot) Run(ctx context.Context) error {
	if err := b.connect(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	b.typing = newTyping(b.cli, b.cfg.TypingTimeout, b.log)
	defer b.typing.stop()
	b.desk.Attach(Platform, b)
	if err := b.desk.Resume(ctx, Platform); err != nil {
		b.log.WarnContext(ctx, "resume open renders", "err", err)
	}
	b.log.InfoContext(ctx, "matrix bot syncing", logkey.DeviceID, b.cli.DeviceID, "encryption", b.crypto != nil)
	close(b.ready)
	err := b.cli.SyncWithContext(ctx)
	stopped := ctx.Err() != nil
	cancel()
	b.wg.Wait()
	if stopped {
		return nil
	}
	return fmt.Errorf("matrix: sync: %w", err)
}

// Ready is closed once Run has logged in, set up encryption and attached to
// chatops, right before the first /sync.
func (b *Bot) Ready() <-chan struct{} { return b.ready }

// UserID is the bot's account.
func (b *Bot) UserID() id.UserID { return b.me }

// Client is the logged-in mautrix client (nil before Run connected).
func (b *Bot) Client() *mautrix.Client { return b.cli }

// RateLimited counts the 429 answers the homeserver gave the bot.
func (b *Bot) RateLimited() int64 { return b.limited.Load() }

func (b *Bot) connect(ctx context.Context) error {
	hc := b.cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 180 * time.Second}
	} else {
		c := *hc
		hc = &c
	}
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc.Transport = &rateLimitTransport{next: base, attempts: 5, maxWait: b.cfg.RateLimitWait, log: b.log, limited: func() { b.limited.Add(1) }}
	cli, err := mautrix.NewClient(b.cfg.Homeserver, b.me, "")
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	cli.Client = hc
	cli.Log = zerologFor(b.log)
	cli.DefaultHTTPRetries = 3
	cli.DefaultHTTPBackoff = time.Second
	cli.MaxHTTPBackoff = 30 * time.Second
	cli.IgnoreRateLimit = true // rateLimitTransport already waited what the 429 asked
	cli.UserAgent = "threadline"
	b.cli = cli

	saved, err := b.loadLogin(ctx)
	if err != nil {
		return err
	}
	if err := b.login(ctx, &saved); err != nil {
		return err
	}
	if saved.PickleKey == "" {
		var k [32]byte
		_, _ = rand.Read(k[:])
		saved.PickleKey = hex.EncodeToString(k[:])
	}
	if err := b.saveLogin(ctx, saved); err != nil {
		return err
	}

	syncer := mautrix.NewDefaultSyncer()
	cli.Syncer = syncer
	cli.Store = syncStore{a: b.accounts}
	if b.cfg.Encryption {
		pk := b.cfg.PickleKey
		if pk == "" {
			pk = saved.PickleKey
		}
		if err := b.initCrypto(ctx, []byte(pk)); err != nil {
			return err
		}
	} else {
		cli.StateStore = mautrix.NewMemoryStateStore()
		syncer.OnEvent(cli.StateStoreSyncHandler)
		syncer.OnEventType(event.EventEncrypted, b.enqueueFn(b.onEncryptedWithoutCrypto))
	}
	syncer.OnSync(b.skipBacklog)
	syncer.OnEventType(event.StateMember, b.enqueueFn(b.onMember))
	syncer.OnEventType(event.EventMessage, b.enqueueFn(b.onMessage))
	syncer.OnEventType(event.EventReaction, b.enqueueFn(b.onReaction))
	syncer.OnEventType(event.EventUnstablePollResponse, b.enqueueFn(b.onPollResponse))
	syncer.OnEventType(EventPollResponseStable, b.enqueueFn(b.onPollResponse))

	b.displayName = b.me.Localpart()
	if dn, err := cli.GetOwnDisplayName(ctx); err == nil && dn.DisplayName != "" {
		b.displayName = dn.DisplayName
	}
	return nil
}

func (b *Bot) loadLogin(ctx context.Context) (login, error) {
	var l login
	raw, ok, err := b.accounts.MatrixLogin(ctx, string(b.me))
	if err != nil {
		return l, fmt.Errorf("%w: read the saved login: %w", ErrLogin, err)
	}
	if ok {
		if err := json.Unmarshal(raw, &l); err != nil {
			return l, fmt.Errorf("%w: the saved login is malformed: %w", ErrLogin, err)
		}
	}
	return l, nil
}

func (b *Bot) saveLogin(ctx context.Context, l login) error {
	raw, _ := json.Marshal(l)
	if err := b.accounts.SaveMatrixLogin(ctx, string(b.me), raw); err != nil {
		return fmt.Errorf("%w: keep the login: %w", ErrLogin, err)
	}
	return nil
}

// login authenticates: the configured access token, else the saved one, else
// a password login that reuses the saved device id.
func (b *Bot) login(ctx context.Context, saved *login) error {
	cli := b.cli
	try := func(token string) error {
		cli.AccessToken = token
		who, err := cli.Whoami(ctx)
		if err != nil {
			return err
		}
		if who.UserID != b.me {
			return fmt.Errorf("%w: the access token belongs to %s, not %s", ErrLogin, who.UserID, b.me)
		}
		cli.DeviceID = who.DeviceID
		if saved.DeviceID != "" && saved.DeviceID != who.DeviceID && b.cfg.Encryption {
			b.log.WarnContext(ctx, "the access token is another device than the saved one; the encryption keys of the old device are not used",
				"saved_device_id", saved.DeviceID, logkey.DeviceID, who.DeviceID)
		}
		saved.DeviceID, saved.AccessToken = who.DeviceID, token
		return nil
	}
	if b.cfg.AccessToken != "" {
		if err := try(b.cfg.AccessToken); err != nil {
			return fmt.Errorf("%w: the configured access token: %w", ErrLogin, err)
		}
		return nil
	}
	if saved.AccessToken != "" {
		err := try(saved.AccessToken)
		if err == nil {
			return nil
		}
		if !errors.Is(err, mautrix.MUnknownToken) {
			return fmt.Errorf("%w: the saved access token: %w", ErrLogin, err)
		}
		b.log.InfoContext(ctx, "the saved access token is no longer valid, logging in with the password", logkey.DeviceID, saved.DeviceID)
	}
	device := saved.DeviceID
	if device == "" {
		device = id.DeviceID(b.cfg.DeviceID)
	}
	if device == "" {
		var r [4]byte
		_, _ = rand.Read(r[:])
		device = id.DeviceID("THREADLINE_" + strings.ToUpper(hex.EncodeToString(r[:])))
	}
	resp, err := cli.Login(ctx, &mautrix.ReqLogin{
		Type:                     mautrix.AuthTypePassword,
		Identifier:               mautrix.UserIdentifier{Type: mautrix.IdentifierTypeUser, User: string(b.me)},
		Password:                 b.cfg.Password,
		DeviceID:                 device,
		InitialDeviceDisplayName: "Threadline",
		StoreCredentials:         true,
	})
	if err != nil {
		return fmt.Errorf("%w: password login as %s: %w", ErrLogin, b.me, err)
	}
	saved.DeviceID, saved.AccessToken = resp.DeviceID, resp.AccessToken
	b.log.InfoContext(ctx, "logged in with the password", logkey.DeviceID, resp.DeviceID)
	return nil
}

// syncStore keeps the /sync position in Accounts.
type syncStore struct{ a Accounts }

func (s syncStore) SaveFilterID(ctx context.Context, u id.UserID, f string) error {
	return s.a.SaveMatrixFilterID(ctx, string(u), f)
}

func (s syncStore) LoadFilterID(ctx context.Context, u id.UserID) (string, error) {
	_, f, err := s.a.MatrixSync(ctx, string(u))
	return f, err
}

func (s syncStore) SaveNextBatch(ctx context.Context, u id.UserID, nb string) error {
	return s.a.SaveMatrixNextBatch(ctx, string(u), nb)
}

func (s syncStore) LoadNextBatch(ctx context.Context, u id.UserID) (string, error) {
	nb, _, err := s.a.MatrixSync(ctx, string(u))
	return nb, err
}

// skipBacklog keeps the bot from acting on history: on the first sync (no
// saved position) only state and invites are processed, and in a room the bot
// has just joined only the events after its join.
func (b *Bot) skipBacklog(_ context.Context, resp *mautrix.RespSync, since string) bool {
	for _, room := range resp.Rooms.Join {
		evs := room.Timeline.Events
		if since == "" {
			room.Timeline.Events = stateOnly(evs)
			continue
		}
		for i := len(evs) - 1; i >= 0; i-- {
			e := evs[i]
			if e.Type == event.StateMember && e.GetStateKey() == string(b.me) {
				if m, _ := e.Content.Raw["membership"].(string); m == "join" {
					room.Timeline.Events = append(stateOnly(evs[:i+1]), evs[i+1:]...)
					break
				}
			}
		}
	}
	return true
}

func stateOnly(evs []*event.Event) []*event.Event {
	var out []*event.Event
	for _, e := range evs {
		if e.StateKey != nil {
			out = append(out, e)
		}
	}
	return out
}

// enqueueFn returns a sync handler that runs fn on the event under the
// safety net. The handlers are quick (a dedup write, parsing, card lookups):
// attachments are fetched by the desk's thread actor, and a put waits only
// while that thread's queue is full, the backpressure of mautrix's portals.
func (b *Bot) enqueueFn(fn func(context.Context, *event.Event)) mautrix.EventHandler {
	return func(ctx context.Context, evt *event.Event) {
		b.handle(ctx, queued{evt: evt, fn: fn})
	}
}

// handle runs one event's handler under the safety net: a panic is logged
// with its stack (key "stack") and the sender is told in the thread.
func (b *Bot) handle(done context.Context, it queued) {
	ctx, cancel := context.WithTimeout(done, 5*time.Minute)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			b.panics.Add(1)
			b.log.ErrorContext(ctx, "matrix event handler panicked", logkey.EventID, it.evt.ID, logkey.RoomID, it.evt.RoomID,
				"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			b.tellFailure(ctx, it.evt)
		}
	}()
	it.fn(ctx, it.evt)
}

// failureNote is what a sender hears when handling their event panicked.
const failureNote = "Something went wrong on my side while handling that (an internal error; the details are in the bot's log). Please try again, and tell the operator if it keeps happening."

// tellFailure tells the sender of a message or reaction, in its thread, that
// handling it failed.
func (b *Bot) tellFailure(ctx context.Context, evt *event.Event) {
	defer func() {
		if r := recover(); r != nil {
			b.log.ErrorContext(ctx, "telling a sender about a failure panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	if evt.Sender == "" || evt.Sender == b.me || evt.StateKey != nil {
		return
	}
	thread := evt.ID
	if root, _ := threadParent(relatesTo(evt.Content.Raw)); root != "" {
		thread = root
	}
	if err := b.Ephemeral(ctx, b.place(evt.RoomID, thread), user(evt.Sender), failureNote); err != nil {
		b.log.WarnContext(ctx, "tell a sender their event failed", logkey.EventID, evt.ID, "err", err)
	}
}

// Panics counts the event handler panics the bot survived.
func (b *Bot) Panics() int64 { return b.panics.Load() }

// place is the chatops place of a thread in a room.
func (b *Bot) place(room id.RoomID, thread id.EventID) chatops.Place {
	return chatops.Place{Platform: Platform, Workspace: b.cfg.Workspace, Channel: string(room), Thread: string(thread)}
}

func user(u id.UserID) chatops.User { return chatops.User{Platform: Platform, ID: string(u)} }
