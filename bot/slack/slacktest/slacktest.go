// Package slacktest is a fake Slack: the Web API methods the bot uses, served
// the way Slack serves them (form-encoded chat.*, reactions.* and files.* calls
// with the token in the form; JSON views.* calls with a bearer token; unique
// "1700000000.000123" timestamps; {"ok":false,"error":...} failures; 429 with
// Retry-After), per-method rate limits like Slack's tiers, scripted faults, and
// a Socket Mode WebSocket (hello, envelopes, pings, acks, disconnect).
//
// It listens on 127.0.0.1 only. Every call is recorded for assertions.
package slacktest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Identities of the fake workspace.
const (
	TeamID    = "T0FAKE1"
	BotUserID = "UBOT0001"
	BotID     = "BBOT0001"
	AppID     = "AFAKE0001"
	BotToken  = "xoxb-fake-bot-token"
	AppToken  = "xapp-fake-app-token"
)

// Rate is a method's limit: Burst calls at once, PerMinute on average.
type Rate struct {
	PerMinute float64
	Burst     int
}

// Slack's tiers, per method per workspace.
var (
	Tier2 = Rate{PerMinute: 20, Burst: 5}
	Tier3 = Rate{PerMinute: 50, Burst: 5}
	Tier4 = Rate{PerMinute: 100, Burst: 10}
)

// Call is one recorded API call.
type Call struct {
	Method string
	// Form holds the form fields of form-encoded calls (token included).
	Form url.Values
	// JSON is the body of JSON calls.
	JSON json.RawMessage
	// Bearer is the Authorization bearer token, if any.
	Bearer string
	At     time.Time
	// Status is the HTTP status; Error the Slack error ("" when ok).
	Status int
	Error  string
	// Reset says the connection was dropped instead of answered.
	Reset bool
}

// Message is a message as the fake holds it.
type Message struct {
	Channel, TS, ThreadTS string
	// User is the author's user id (BotUserID for the bot's own messages);
	// BotID is set on messages a bot posted (the bot's own: BotID).
	User, BotID string
	Text        string
	// Metadata is the message metadata posted with it (JSON), if any.
	Metadata json.RawMessage
	// Blocks is the JSON of the last blocks sent.
	Blocks json.RawMessage
	// Markdown is what was streamed (chat.startStream/appendStream/stopStream):
	// markdown_text and markdown_text chunks.
	Markdown  string
	Streaming bool
	// DisplayMode is a stream's task_display_mode ("timeline", "plan").
	DisplayMode string
	// Chunks are the stream's chunks, in order; Tasks the task cards they
	// built (latest state, in order of appearance); PlanTitle the title of
	// its plan.
	Chunks    []Chunk
	Tasks     []Task
	PlanTitle string
	Edits     int
	Reactions []string
	// Ephemeral is the user a chat.postEphemeral message was shown to.
	Ephemeral string
	// Files are the ids of files shared into the message.
	Files []string
	// Versions is every text/markdown the message showed, oldest first.
	Versions []string
}

// File is an uploaded or downloadable file.
type File struct {
	ID, Name, Title, MimeType string
	Content                   []byte
	Channel, ThreadTS         string
	// serve, when set, is how many bytes a download serves (ServeSize);
	// served counts the bytes downloads wrote.
	serve, served int64
}

// Server is the fake.
type Server struct {
	t    testing.TB
	srv  *http.Server
	ln   net.Listener
	base string // http://127.0.0.1:port/

	mu       sync.Mutex
	now      func() time.Time
	seq      int64
	lastTS   int64 // microseconds of the newest ts
	calls    []Call
	messages map[string]*Message // by channel + "/" + ts
	order    []string
	files    map[string]*File
	triggers map[string]time.Time
	limits   map[string]Rate
	buckets  map[string]*bucket
	faults   map[string][]fault
	refused  map[string]string // token: the error Slack refuses it with
	delays   map[string]time.Duration
	noStream string
	views    []json.RawMessage
	statuses map[string][]StatusChange // by channel + "/" + thread ts
	titles   map[string]string
	prompts  map[string]SuggestedPrompts
	sessions map[string]*session // agent sessions, by channel + "/" + thread ts
	// noSessions is the error agents.sessions.* answer once sessionsSet
	// (AgentSessions); before, not_authorized.
	noSessions  string
	sessionsSet bool
	homes       map[string][]json.RawMessage // by user
	users       map[string]User
	bots        map[string]string // other apps' bot ids: their names
	listeners   []chan Call
	wsConns     []*wsConn
	acks        map[string]json.RawMessage
	ackWaiters  map[string]chan json.RawMessage
	// PingInterval is how often the Socket Mode side pings (default 5 s).
	PingInterval time.Duration
	// Spread sends each envelope to one connected client, in turn (replicas
	// sharing an app), instead of to every one. Set it before connecting.
	Spread     bool
	spreadNext int
}

type fault struct {
	err        string
	status     int
	retryAfter int
	// reset drops the connection without an answer: before the call takes
	// effect, or (resetAfter) after it did, the case that tempts a retry into
	// a duplicate.
	reset, resetAfter bool
}

// New starts a fake Slack on 127.0.0.1 and stops it in t.Cleanup.
func New(t testing.TB) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("slacktest: listen: %v", err)
	}
	s := &Server{
		t: t, ln: ln, base: "http://" + ln.Addr().String() + "/",
		now:      time.Now,
		messages: map[string]*Message{}, files: map[string]*File{}, triggers: map[string]time.Time{},
		limits: map[string]Rate{}, buckets: map[string]*bucket{}, faults: map[string][]fault{}, refused: map[string]string{}, delays: map[string]time.Duration{},
		acks: map[string]json.RawMessage{}, ackWaiters: map[string]chan json.RawMessage{},
		statuses: map[string][]StatusChange{}, titles: map[string]string{}, prompts: map[string]SuggestedPrompts{}, sessions: map[string]*session{}, homes: map[string][]json.RawMessage{},
		bots:         map[string]string{},
		users:        map[string]User{BotUserID: {ID: BotUserID, Name: "threadline", RealName: "Threadline", IsBot: true}},
		PingInterval: 5 * time.Second,
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", s.api)
	mux.HandleFunc("/upload/", s.upload)
	mux.HandleFunc("/files/", s.download)
	mux.HandleFunc("/ws", s.socket)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	t.Cleanup(s.Close)
	return s
}

// APIURL is the Web API base URL with its trailing slash, for
// slack.OptionAPIURL.
func (s *Server) APIURL() string { return s.base + "api/" }

// Close stops the server.
func (s *Server) Close() {
	s.mu.Lock()
	conns := s.wsConns
	s.wsConns = nil
	s.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
	_ = s.srv.Close()
}

// SetLimit makes the fake enforce r on method (per workspace, like Slack).
func (s *Server) SetLimit(method string, r Rate) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limits[method] = r
	delete(s.buckets, method)
}

// RateLimitNext answers the next n calls of method with 429 and Retry-After.
func (s *Server) RateLimitNext(method string, n, retryAfterSeconds int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.faults[method] = append(s.faults[method], fault{status: http.StatusTooManyRequests, retryAfter: retryAfterSeconds})
	}
}

// ResetNext drops the connection of the next n calls of method without an
// answer (the client sees a reset or EOF). With after set the call takes effect
// first, as when a response is lost on the way back.
func (s *Server) ResetNext(method string, n int, after bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.faults[method] = append(s.faults[method], fault{reset: !after, resetAfter: after})
	}
}

// Delay makes every later call of method wait d before it is answered, as a
// slow Slack would (0 removes the delay).
func (s *Server) Delay(method string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delays[method] = d
}

// FailNext answers the next n calls of method with {"ok":false,"error":err}.
func (s *Server) FailNext(method string, n int, err string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.faults[method] = append(s.faults[method], fault{err: err})
	}
}

// Refuse makes the fake refuse token from now on, as Slack refuses a revoked
// or wrong token: every call made with it (the bot token's Web API calls, the
// app token's apps.connections.open) is answered HTTP 200
// {"ok":false,"error":err}, e.g. "token_revoked", "invalid_auth" or
// "not_allowed_token_type". An empty err accepts it again.
func (s *Server) Refuse(token, err string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == "" {
		delete(s.refused, token)
		return
	}
	s.refused[token] = err
}

// FailNextStatus answers the next n calls of method ("" for any method)
// with HTTP status (e.g. 500, 503) and an HTML page, as Slack does when it
// fails (no JSON, no Retry-After); the calls take no effect. A method's own
// faults go before those of any method.
func (s *Server) FailNextStatus(method string, n, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.faults[method] = append(s.faults[method], fault{status: status})
	}
}

// ClearFaults drops the failures FailNextStatus queued and not served yet.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.faults)
}

// DisableStreaming makes chat.startStream fail with err (e.g. "not_allowed"),
// as in a workspace or surface where streaming is not available.
func (s *Server) DisableStreaming(err string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noStream = err
}

// Advance moves the fake's clock (timestamps, trigger expiry, rate limits)
// forward by d.
func (s *Server) Advance(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	prev := s.now
	s.now = func() time.Time { return prev().Add(d) }
}

// NewTrigger mints a trigger_id valid for 3 s, like the one in an interaction.
func (s *Server) NewTrigger() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	id := fmt.Sprintf("%d.%d.fake%06x", s.now().Unix(), s.seq, s.seq*7919)
	s.triggers[id] = s.now()
	return id
}

// AddFile makes a file downloadable with the bot token, as a file shared in a
// message, and returns its private download URL.
func (s *Server) AddFile(name, mimeType string, content []byte) (id, downloadURL string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	id = fmt.Sprintf("F%08d", s.seq)
	s.files[id] = &File{ID: id, Name: name, MimeType: mimeType, Content: content}
	return id, s.base + "files/" + id + "/" + url.PathEscape(name)
}

// ServeSize makes the download of file id serve n bytes (its content
// repeated, or "x"s) whatever size the file declares, as a file that lies
// about its size; Served says how many of them were written.
func (s *Server) ServeSize(id string, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.files[id]; f != nil {
		f.serve = n
	}
}

// Served returns how many bytes the downloads of file id wrote so far.
func (s *Server) Served(id string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.files[id]; f != nil {
		return f.served
	}
	return 0
}

// Calls returns the recorded calls of method ("" for all).
func (s *Server) Calls(method string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if method == "" || c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// Listen returns a channel receiving every later call (buffered; calls are
// dropped when it is full).
func (s *Server) Listen() <-chan Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := make(chan Call, 1024)
	s.listeners = append(s.listeners, ch)
	return ch
}

// Message returns a copy of the message.
func (s *Server) Message(channel, ts string) (Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.messages[channel+"/"+ts]
	if !ok {
		return Message{}, false
	}
	return m.copy(), true
}

func (m *Message) copy() Message {
	c := *m
	c.Reactions = append([]string(nil), m.Reactions...)
	c.Files = append([]string(nil), m.Files...)
	c.Versions = append([]string(nil), m.Versions...)
	c.Chunks = append([]Chunk(nil), m.Chunks...)
	c.Tasks = append([]Task(nil), m.Tasks...)
	return c
}

// Thread returns the messages of a thread (the root and its replies, not
// ephemeral ones), in posting order.
func (s *Server) Thread(channel, threadTS string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, k := range s.order {
		m := s.messages[k]
		if m.Channel == channel && m.Ephemeral == "" && (m.TS == threadTS || m.ThreadTS == threadTS) {
			out = append(out, m.copy())
		}
	}
	return out
}

// Messages returns every message, in posting order.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Message, 0, len(s.order))
	for _, k := range s.order {
		out = append(out, s.messages[k].copy())
	}
	return out
}

// Files returns the uploaded files.
func (s *Server) Files() []File {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []File
	for _, f := range s.files {
		if f.Channel != "" {
			out = append(out, *f)
		}
	}
	return out
}

// Views returns the views opened (views.open JSON "view" objects).
func (s *Server) Views() []json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]json.RawMessage(nil), s.views...)
}

// PostUserMessage adds a message by a user (not through the API), returning
// its ts, so that the bot's replies can thread under it.
func (s *Server) PostUserMessage(channel, threadTS, text string) string {
	return s.Say(Said{Channel: channel, ThreadTS: threadTS, Text: text})
}

// Said is a message a person writes (Say).
type Said struct {
	User, Channel, ThreadTS, Text string
	// Files are ids of files the message shares (AddFile).
	Files []string
	// BotID makes it a message another bot (app) posted, shown as BotName.
	BotID, BotName string
}

// Say adds a message (not through the API) and returns its ts.
func (s *Server) Say(m Said) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.nextTS()
	s.store(&Message{Channel: m.Channel, TS: ts, ThreadTS: m.ThreadTS, User: m.User, BotID: m.BotID, Text: m.Text, Files: m.Files})
	if m.BotID != "" {
		s.bots[m.BotID] = m.BotName
	}
	return ts
}

// User is a member of the fake workspace, as users.info shows it.
type User struct {
	ID, Name, RealName, DisplayName string
	IsBot                           bool
}

// AddUser makes users.info know u.
func (s *Server) AddUser(u User) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[u.ID] = u
}

// nextTS returns a new message ts. Like Slack's, it is the time the message
// arrived, in microseconds (typed decisions compare it with a card's time),
// and unique: a ts taken in the same microsecond as the last one moves on.
func (s *Server) nextTS() string {
	s.seq++
	us := max(s.now().UnixMicro(), s.lastTS+1)
	s.lastTS = us
	return fmt.Sprintf("%d.%06d", us/1e6, us%1e6)
}

func (s *Server) store(m *Message) {
	k := m.Channel + "/" + m.TS
	s.messages[k] = m
	s.order = append(s.order, k)
}

type bucket struct {
	tokens float64
	at     time.Time
}

// admit applies the method's rate limit; it returns the seconds to wait when
// the call is refused.
func (s *Server) admit(method string) (int, bool) {
	r, ok := s.limits[method]
	if !ok {
		return 0, true
	}
	now := s.now()
	b := s.buckets[method]
	if b == nil {
		b = &bucket{tokens: float64(r.Burst), at: now}
		s.buckets[method] = b
	}
	b.tokens = min(float64(r.Burst), b.tokens+now.Sub(b.at).Minutes()*r.PerMinute)
	b.at = now
	if b.tokens >= 1 {
		b.tokens--
		return 0, true
	}
	wait := (1 - b.tokens) / r.PerMinute * 60
	return max(1, int(wait+0.999)), false
}

type response map[string]any

func (s *Server) api(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	call := Call{Method: method, At: time.Now()}
	if auth := r.Header.Get("Authorization"); strings.HasPrefix(auth, "Bearer ") {
		call.Bearer = strings.TrimPrefix(auth, "Bearer ")
	}
	s.mu.Lock()
	delay := s.delays[method]
	s.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct == "application/json" {
		call.JSON, _ = io.ReadAll(r.Body)
	} else {
		_ = r.ParseForm()
		call.Form = r.PostForm
		if len(call.Form) == 0 {
			call.Form = r.Form
		}
	}
	s.mu.Lock()
	status, resp := s.handle(method, &call)
	call.Status = status
	if call.Reset {
		s.calls = append(s.calls, call)
		s.mu.Unlock()
		// Drop the connection: the client gets no answer.
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	}
	if resp != nil {
		if e, ok := resp["error"].(string); ok {
			call.Error = e
		}
	}
	s.calls = append(s.calls, call)
	for _, l := range s.listeners {
		select {
		case l <- call:
		default:
		}
	}
	s.mu.Unlock()
	if status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", resp["retry_after"].(string))
		w.WriteHeader(status)
		return
	}
	if status >= http.StatusInternalServerError {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, "<html><body><h1>"+http.StatusText(status)+"</h1></body></html>\n")
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(resp)
}

func fail(err string) (int, response) { return http.StatusOK, response{"ok": false, "error": err} }

// handle answers one call; s.mu is held.
func (s *Server) handle(method string, c *Call) (int, response) {
	// Authentication first, like Slack.
	token := c.Form.Get("token")
	if c.JSON != nil || method == "apps.connections.open" {
		token = c.Bearer
	}
	switch {
	case token == "":
		return fail("not_authed")
	case s.refused[token] != "":
		return fail(s.refused[token])
	case method == "apps.connections.open" && token != AppToken:
		return fail("invalid_auth")
	case method != "apps.connections.open" && token != BotToken:
		return fail("invalid_auth")
	}
	key := method
	if len(s.faults[key]) == 0 {
		key = "" // a fault of any method
	}
	if q := s.faults[key]; len(q) > 0 {
		f := q[0]
		s.faults[key] = q[1:]
		switch {
		case f.reset:
			c.Reset = true
			return 0, nil
		case f.resetAfter:
			c.Reset = true // answered below, then dropped by api
		case f.status == http.StatusTooManyRequests:
			return f.status, response{"retry_after": strconv.Itoa(f.retryAfter)}
		case f.status != 0:
			return f.status, nil
		default:
			return fail(f.err)
		}
	}
	if wait, ok := s.admit(method); !ok {
		return http.StatusTooManyRequests, response{"retry_after": strconv.Itoa(wait)}
	}
	if code, r, ok := s.handleAgentUI(method, c); ok {
		return code, r
	}
	if code, r, ok := s.handleSessions(method, c); ok {
		return code, r
	}
	f := c.Form
	switch method {
	case "auth.test":
		return http.StatusOK, response{"ok": true, "url": "https://fake.slack.com/", "team": "Fake", "user": "threadline",
			"team_id": TeamID, "user_id": BotUserID, "bot_id": BotID}
	case "apps.connections.open":
		return http.StatusOK, response{"ok": true, "url": "ws" + strings.TrimPrefix(s.base, "http") + "ws"}
	case "chat.postMessage":
		if f.Get("channel") == "" {
			return fail("channel_not_found")
		}
		if f.Get("text") == "" && f.Get("blocks") == "" {
			return fail("no_text")
		}
		if e := checkSize(f); e != "" {
			return fail(e)
		}
		ts := s.nextTS()
		m := &Message{Channel: f.Get("channel"), TS: ts, ThreadTS: f.Get("thread_ts"), User: BotUserID, BotID: BotID, Text: f.Get("text"), Blocks: json.RawMessage(f.Get("blocks"))}
		if md := f.Get("metadata"); md != "" {
			if !json.Valid([]byte(md)) {
				return fail("invalid_metadata_format")
			}
			m.Metadata = json.RawMessage(md)
		}
		m.Versions = []string{m.Text}
		s.store(m)
		s.replied(m.Channel, m.ThreadTS)
		return http.StatusOK, response{"ok": true, "channel": m.Channel, "ts": ts, "message": response{"text": m.Text, "ts": ts}}
	case "conversations.replies":
		return s.replies(f)
	case "users.info":
		u, ok := s.users[f.Get("user")]
		if !ok {
			return fail("user_not_found")
		}
		return http.StatusOK, response{"ok": true, "user": response{"id": u.ID, "team_id": TeamID, "name": u.Name, "real_name": u.RealName, "is_bot": u.IsBot,
			"profile": response{"real_name": u.RealName, "display_name": u.DisplayName, "real_name_normalized": u.RealName, "display_name_normalized": u.DisplayName}}}
	case "chat.update":
		m, ok := s.messages[f.Get("channel")+"/"+f.Get("ts")]
		if !ok || m.Ephemeral != "" {
			return fail("message_not_found")
		}
		if e := checkSize(f); e != "" {
			return fail(e)
		}
		m.Text, m.Edits = f.Get("text"), m.Edits+1
		if b := f.Get("blocks"); b != "" {
			m.Blocks = json.RawMessage(b)
		}
		m.Versions = append(m.Versions, m.Text)
		return http.StatusOK, response{"ok": true, "channel": m.Channel, "ts": m.TS, "text": m.Text}
	case "chat.delete":
		k := f.Get("channel") + "/" + f.Get("ts")
		if _, ok := s.messages[k]; !ok {
			return fail("message_not_found")
		}
		delete(s.messages, k)
		for i, o := range s.order {
			if o == k {
				s.order = append(s.order[:i:i], s.order[i+1:]...)
				break
			}
		}
		return http.StatusOK, response{"ok": true, "channel": f.Get("channel"), "ts": f.Get("ts")}
	case "chat.postEphemeral":
		if f.Get("user") == "" {
			return fail("user_not_in_channel")
		}
		ts := s.nextTS()
		s.store(&Message{Channel: f.Get("channel"), TS: ts, ThreadTS: f.Get("thread_ts"), Text: f.Get("text"), Blocks: json.RawMessage(f.Get("blocks")), Ephemeral: f.Get("user")})
		return http.StatusOK, response{"ok": true, "message_ts": ts}
	case "chat.startStream":
		if s.noStream != "" {
			return fail(s.noStream)
		}
		ch := f.Get("channel")
		if f.Get("thread_ts") == "" {
			return fail("invalid_arguments")
		}
		if strings.HasPrefix(ch, "C") || strings.HasPrefix(ch, "G") {
			if f.Get("recipient_user_id") == "" {
				return fail("missing_recipient_user_id")
			}
			if f.Get("recipient_team_id") == "" {
				return fail("missing_recipient_team_id")
			}
		}
		if len([]rune(f.Get("markdown_text"))) > 12000 {
			return fail("msg_too_long")
		}
		mode := f.Get("task_display_mode")
		if mode != "" && mode != "timeline" && mode != "plan" {
			return fail("invalid_arguments")
		}
		m := &Message{Channel: ch, ThreadTS: f.Get("thread_ts"), User: BotUserID, BotID: BotID, Streaming: true, DisplayMode: cmpOr(mode, "timeline")}
		if e := applyChunks(m, f); e != "" {
			return fail(e)
		}
		m.TS = s.nextTS()
		m.Versions = []string{m.Markdown}
		s.store(m)
		s.replied(m.Channel, m.ThreadTS)
		return http.StatusOK, response{"ok": true, "channel": ch, "ts": m.TS}
	case "chat.appendStream", "chat.stopStream":
		m, ok := s.messages[f.Get("channel")+"/"+f.Get("ts")]
		if !ok {
			return fail("message_not_found")
		}
		if !m.Streaming {
			return fail("message_not_in_streaming_state")
		}
		md := f.Get("markdown_text")
		if len([]rune(md)) > 12000 {
			return fail("msg_too_long")
		}
		if method == "chat.appendStream" && md == "" && f.Get("chunks") == "" {
			return fail("invalid_arguments")
		}
		// Chunks apply all or nothing.
		next := m.copy()
		if e := applyChunks(&next, f); e != "" {
			return fail(e)
		}
		m.Markdown, m.Chunks, m.Tasks, m.PlanTitle = next.Markdown, next.Chunks, next.Tasks, next.PlanTitle
		if method == "chat.stopStream" {
			m.Streaming = false
			if b := f.Get("blocks"); b != "" {
				m.Blocks = json.RawMessage(b)
			}
		}
		m.Edits++
		m.Versions = append(m.Versions, m.Markdown)
		return http.StatusOK, response{"ok": true, "channel": m.Channel, "ts": m.TS}
	case "reactions.add":
		m, ok := s.messages[f.Get("channel")+"/"+f.Get("timestamp")]
		if !ok {
			return fail("message_not_found")
		}
		for _, r := range m.Reactions {
			if r == f.Get("name") {
				return fail("already_reacted")
			}
		}
		m.Reactions = append(m.Reactions, f.Get("name"))
		return http.StatusOK, response{"ok": true}
	case "files.info":
		file, ok := s.files[f.Get("file")]
		if !ok || file.Content == nil {
			return fail("file_not_found")
		}
		return http.StatusOK, response{"ok": true, "file": s.fileShape(file)}
	case "files.getUploadURLExternal":
		n, _ := strconv.Atoi(f.Get("length"))
		if f.Get("filename") == "" || n <= 0 {
			return fail("invalid_arguments")
		}
		s.seq++
		id := fmt.Sprintf("F%08d", s.seq)
		s.files[id] = &File{ID: id, Name: f.Get("filename")}
		return http.StatusOK, response{"ok": true, "upload_url": s.base + "upload/" + id, "file_id": id}
	case "files.completeUploadExternal":
		var fs []struct {
			ID    string `json:"id"`
			Title string `json:"title"`
		}
		if err := json.Unmarshal([]byte(f.Get("files")), &fs); err != nil || len(fs) == 0 {
			return fail("invalid_arguments")
		}
		var out []response
		for _, x := range fs {
			file, ok := s.files[x.ID]
			if !ok || file.Content == nil {
				return fail("file_not_found")
			}
			file.Title, file.Channel, file.ThreadTS = x.Title, f.Get("channel_id"), f.Get("thread_ts")
			if file.MimeType == "" {
				file.MimeType = cmpOr(mime.TypeByExtension(path.Ext(file.Name)), "application/octet-stream")
			}
			ts := s.nextTS()
			s.store(&Message{Channel: file.Channel, TS: ts, ThreadTS: file.ThreadTS, User: BotUserID, BotID: BotID, Text: f.Get("initial_comment"), Files: []string{file.ID}})
			s.replied(file.Channel, file.ThreadTS)
			out = append(out, response{"id": file.ID, "title": file.Title})
		}
		return http.StatusOK, response{"ok": true, "files": out}
	case "views.open", "views.update", "views.push":
		var req struct {
			TriggerID string          `json:"trigger_id"`
			View      json.RawMessage `json:"view"`
		}
		if err := json.Unmarshal(c.JSON, &req); err != nil || len(req.View) == 0 {
			return fail("invalid_arguments")
		}
		if method != "views.update" {
			at, ok := s.triggers[req.TriggerID]
			switch {
			case !ok:
				return fail("invalid_trigger_id")
			case s.now().Sub(at) > 3*time.Second:
				return fail("expired_trigger_id")
			}
			delete(s.triggers, req.TriggerID)
		}
		if len(req.View) > 250_000 {
			return fail("view_too_large")
		}
		s.views = append(s.views, req.View)
		s.seq++
		return http.StatusOK, response{"ok": true, "view": response{"id": fmt.Sprintf("V%08d", s.seq), "hash": fmt.Sprintf("%d.fakehash", s.seq)}}
	}
	return http.StatusNotFound, response{"ok": false, "error": "unknown_method"}
}

// replies answers conversations.replies as Slack does: the thread's parent
// and replies, oldest first, within oldest/latest (exclusive unless
// inclusive), limit per page (default and most 1000) and an opaque cursor
// ("next_ts:<ts>", base64) in response_metadata.next_cursor while has_more.
// Each message has its user, its bot_id and bot_profile when a bot posted it,
// and its files.
func (s *Server) replies(f url.Values) (int, response) {
	root, ok := s.messages[f.Get("channel")+"/"+f.Get("ts")]
	if !ok {
		return fail("thread_not_found")
	}
	if root.ThreadTS != "" && root.ThreadTS != root.TS {
		if root, ok = s.messages[root.Channel+"/"+root.ThreadTS]; !ok {
			return fail("thread_not_found")
		}
	}
	limit := 1000
	if l := f.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 {
			return fail("invalid_limit")
		}
		limit = min(n, 1000)
	}
	after := ""
	if c := f.Get("cursor"); c != "" {
		raw, err := base64.StdEncoding.DecodeString(c)
		ts, ok := strings.CutPrefix(string(raw), "next_ts:")
		if err != nil || !ok {
			return fail("invalid_cursor")
		}
		after = ts
	}
	inclusive := f.Get("inclusive") == "true" || f.Get("inclusive") == "1"
	oldest, latest := f.Get("oldest"), f.Get("latest")
	withMeta := f.Get("include_all_metadata") == "true" || f.Get("include_all_metadata") == "1"
	var (
		msgs []response
		next string
	)
	for _, k := range s.order {
		m := s.messages[k]
		if m.Channel != root.Channel || (m.TS != root.TS && m.ThreadTS != root.TS) || m.Ephemeral != "" {
			continue
		}
		if (after != "" && tsLess(m.TS, after)) ||
			(oldest != "" && (tsLess(m.TS, oldest) || (!inclusive && m.TS == oldest))) ||
			(latest != "" && (tsLess(latest, m.TS) || (!inclusive && m.TS == latest))) {
			continue
		}
		if len(msgs) == limit {
			next = m.TS
			break
		}
		r := response{"type": "message", "ts": m.TS, "thread_ts": root.TS, "text": m.Text}
		if m.User != "" {
			r["user"] = m.User
		}
		if m.BotID != "" {
			name := s.bots[m.BotID]
			if m.BotID == BotID {
				name = "Threadline"
			}
			r["bot_id"] = m.BotID
			r["app_id"] = AppID
			r["bot_profile"] = response{"id": m.BotID, "name": name, "app_id": AppID, "team_id": TeamID}
			if m.User == "" {
				r["subtype"] = "bot_message"
				r["username"] = name
			}
		}
		if m.TS == root.TS {
			r["reply_count"] = s.replyCount(root)
		} else {
			r["parent_user_id"] = root.User
		}
		if len(m.Files) > 0 {
			var files []response
			for _, id := range m.Files {
				if file, ok := s.files[id]; ok {
					files = append(files, s.fileShape(file))
				}
			}
			r["files"] = files
		}
		if withMeta && len(m.Metadata) > 0 {
			r["metadata"] = m.Metadata
		}
		msgs = append(msgs, r)
	}
	resp := response{"ok": true, "messages": msgs, "has_more": next != ""}
	cursor := ""
	if next != "" {
		cursor = base64.StdEncoding.EncodeToString([]byte("next_ts:" + next))
	}
	resp["response_metadata"] = response{"next_cursor": cursor}
	return http.StatusOK, resp
}

// fileShape is a file as messages and files.info show it (s.mu held): its
// url_private and url_private_download serve its bytes to the bot token.
func (s *Server) fileShape(f *File) response {
	return response{"id": f.ID, "name": f.Name, "title": cmpOr(f.Title, f.Name), "mimetype": f.MimeType,
		"filetype": fileType(f.Name), "size": len(f.Content), "mode": "hosted", "is_external": false,
		"url_private":          s.base + "files/" + f.ID + "/" + url.PathEscape(f.Name),
		"url_private_download": s.base + "files/" + f.ID + "/download/" + url.PathEscape(f.Name)}
}

// fileType is Slack's filetype for a name ("png", "text"…).
func fileType(name string) string {
	ext := strings.ToLower(strings.TrimPrefix(path.Ext(name), "."))
	switch ext {
	case "":
		return "binary"
	case "txt", "log":
		return "text"
	case "jpeg":
		return "jpg"
	case "md":
		return "markdown"
	}
	return ext
}

// replyCount counts a thread's replies (s.mu held).
func (s *Server) replyCount(root *Message) int {
	n := 0
	for _, k := range s.order {
		if m := s.messages[k]; m.Channel == root.Channel && m.ThreadTS == root.TS && m.TS != root.TS && m.Ephemeral == "" {
			n++
		}
	}
	return n
}

// tsLess orders two message timestamps ("1700000000.000123").
func tsLess(a, b string) bool {
	as, af, _ := strings.Cut(a, ".")
	bs, bf, _ := strings.Cut(b, ".")
	if len(as) != len(bs) {
		return len(as) < len(bs)
	}
	if as != bs {
		return as < bs
	}
	return af < bf
}

// checkSize applies Slack's message limits: text up to 40,000 characters,
// at most 50 blocks, 3,000 characters per section text, 12,000 per markdown
// block.
func checkSize(f url.Values) string {
	if len([]rune(f.Get("text"))) > 40000 {
		return "msg_too_long"
	}
	b := f.Get("blocks")
	if b == "" {
		return ""
	}
	var blocks []struct {
		Type string `json:"type"`
		Text any    `json:"text"`
	}
	if err := json.Unmarshal([]byte(b), &blocks); err != nil {
		return "invalid_blocks"
	}
	if len(blocks) > 50 {
		return "invalid_blocks"
	}
	md := 0
	for _, bl := range blocks {
		switch t := bl.Text.(type) {
		case string: // markdown block
			md += len([]rune(t))
			if len([]rune(t)) > 12000 {
				return "invalid_blocks"
			}
		case map[string]any:
			if s, _ := t["text"].(string); len([]rune(s)) > 3000 {
				return "invalid_blocks"
			}
		}
	}
	if md > 12000 {
		return "msg_blocks_too_long"
	}
	return ""
}

// upload receives the file bytes of the upload flow (multipart, bearer token).
func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.URL.Path, "/upload/")
	if r.Header.Get("Authorization") != "Bearer "+BotToken {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	mr, err := r.MultipartReader()
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var content []byte
	for {
		p, err := mr.NextPart()
		if err != nil {
			break
		}
		if p.FormName() == "file" {
			content, _ = io.ReadAll(p)
		}
		_ = p.Close()
	}
	s.mu.Lock()
	f, ok := s.files[id]
	if ok {
		f.Content = content
		if f.Content == nil {
			f.Content = []byte{}
		}
	}
	s.mu.Unlock()
	if !ok {
		http.Error(w, "no such upload", http.StatusNotFound)
		return
	}
	_, _ = io.WriteString(w, "OK - "+strconv.Itoa(len(content)))
}

// download serves a file's bytes to the bot token.
func (s *Server) download(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+BotToken {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	rest := strings.TrimPrefix(r.URL.Path, "/files/")
	id, _, _ := strings.Cut(rest, "/")
	s.mu.Lock()
	f, ok := s.files[id]
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", f.MimeType)
	s.mu.Lock()
	content, serve := f.Content, f.serve
	s.mu.Unlock()
	if serve == 0 {
		n, _ := w.Write(content)
		s.count(f, n)
		return
	}
	// A lying file: serve bytes until serve or the client hangs up, in
	// pieces, with no Content-Length (chunked, as a stream would be).
	piece := make([]byte, 32<<10)
	if len(content) == 0 {
		content = []byte("x")
	}
	for i := range piece {
		piece[i] = content[i%len(content)]
	}
	for left := serve; left > 0; {
		n, err := w.Write(piece[:min(left, int64(len(piece)))])
		s.count(f, n)
		left -= int64(n)
		if err != nil {
			return
		}
	}
}

func (s *Server) count(f *File, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f.served += int64(n)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
