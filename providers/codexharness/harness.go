// Harness: one `app-server` process per run, on a procrun.Session.

package codexharness

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/threadline-bot/threadline/providers/jsonrpc"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/agentcore/procrun"
)

// Defaults.
const (
	DefaultBin              = "codex"
	DefaultInterruptTimeout = 10 * time.Second
	DefaultStartTimeout     = 60 * time.Second
	DefaultExitTimeout      = 5 * time.Second
	DefaultApprovalPolicy   = "untrusted"
	DefaultSandbox          = "workspace-write"
	DefaultClientName       = "threadline"
	DefaultClientVersion    = "0.1.0"
)

// Options configures a Harness. Everything that names the agent comes from
// here: the harness hard-codes no provider identity.
type Options struct {
	// Provider is the provider id put on every event (required).
	Provider agent.ProviderID
	// Label names the agent in messages ("Codex", "MiniMax"); default Provider.
	Label string
	// Launch: Bin is the executable (default "codex"; RunRequest.Bin
	// overrides it), Env extra child environment for every run (below RunRequest.Env),
	// HostEnv, Secret, and StopGrace, how long a cancelled run waits for
	// turn/completed after turn/interrupt before the kill (default 10 s).
	procrun.Launch
	// Args come before "app-server" (e.g. -c overrides); RunRequest.Args after it.
	Args []string
	// CodexHome, when set, is the child's CODEX_HOME: it wins over Env, but
	// not over a run's own (RunRequest.Env's, which a sandboxed run gets in
	// its chat's agent state, the only one it may write).
	CodexHome string
	// ModelProvider is thread/start's modelProvider; empty leaves the config's.
	ModelProvider string
	// ApprovalPolicy is thread/start's approvalPolicy; default "untrusted", so
	// that every non-trivial command is asked for.
	ApprovalPolicy string
	// Sandbox is the thread sandbox when RunRequest.Sandbox is empty; default
	// "workspace-write".
	Sandbox string
	// Config is thread/start's config overrides map.
	Config map[string]any
	// ClientName and ClientVersion are initialize's clientInfo.
	ClientName, ClientVersion string
	// StartTimeout bounds initialize → thread → turn/start; default 60 s.
	StartTimeout time.Duration
	// ExitTimeout is how long the process may take to exit after the turn
	// ended and stdin was closed; default 5 s.
	ExitTimeout time.Duration
	// CredentialEnv names the variables that hold credentials (e.g.
	// OPENAI_API_KEY); their values key the capability cache (see Discover).
	CredentialEnv []string
	// CatalogTTL, FallbackTTL and DiscoveryTimeout tune Discover.
	CatalogTTL, FallbackTTL, DiscoveryTimeout time.Duration
	// InstallHint is appended to Run's not-installed error.
	InstallHint string
}

// Harness runs app-server turns for one provider.
type Harness struct {
	logger *slog.Logger
	opts   Options
	cache  catalogCache
}

// New returns a Harness. A nil logger discards logs.
func New(logger *slog.Logger, opts Options) *Harness {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if opts.Label == "" {
		opts.Label = string(opts.Provider)
	}
	opts.Launch = opts.Launch.WithDefaults(DefaultBin, DefaultInterruptTimeout)
	opts.ApprovalPolicy = cmp.Or(opts.ApprovalPolicy, DefaultApprovalPolicy)
	opts.Sandbox = cmp.Or(opts.Sandbox, DefaultSandbox)
	opts.ClientName = cmp.Or(opts.ClientName, DefaultClientName)
	opts.ClientVersion = cmp.Or(opts.ClientVersion, DefaultClientVersion)
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{
		{&opts.StartTimeout, DefaultStartTimeout},
		{&opts.ExitTimeout, DefaultExitTimeout}, {&opts.CatalogTTL, DefaultCatalogTTL},
		{&opts.FallbackTTL, DefaultFallbackTTL}, {&opts.DiscoveryTimeout, DefaultDiscoveryTimeout},
	} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	return &Harness{logger: procrun.ProviderLogger(logger, opts.Provider), opts: opts}
}

// Options returns the effective options (defaults applied).
func (h *Harness) Options() Options { return h.opts }

// ChildEnv is the complete environment of a child for a run with runEnv:
// the filtered host environment, Options.Env, runEnv and CODEX_HOME.
func (h *Harness) ChildEnv(runEnv map[string]string) []string {
	return procrun.Environ(h.opts.HostEnv(), h.extraEnv(runEnv), h.opts.Secret)
}

func (h *Harness) extraEnv(runEnv map[string]string) map[string]string {
	extra := maps.Clone(h.opts.Env)
	if extra == nil {
		extra = map[string]string{}
	}
	maps.Copy(extra, runEnv)
	if h.opts.CodexHome != "" && runEnv["CODEX_HOME"] == "" {
		extra["CODEX_HOME"] = h.opts.CodexHome
	}
	return extra
}

// IsSessionNotFound reports whether a thread/resume or thread/fork error
// message says the thread does not exist. The server answers all of these
// with code -32600, like validation errors, so the text decides.
func IsSessionNotFound(msg string) bool {
	m := strings.ToLower(msg)
	for _, s := range []string{"no rollout found for thread id", "thread not found", "invalid session id", "thread not loaded"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// Run executes one turn. See the agent package doc and this package's doc.
func (h *Harness) Run(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
	logger := h.logger.With("chat_id", req.ChatID, "run_id", req.RunID)
	// Model and effort go over the protocol, but a value no id has is
	// refused the same way as on a command line.
	if err := agent.CheckRunArgs(req); err != nil {
		return fmt.Errorf("codex app-server: %w", err)
	}
	if ctx.Err() != nil {
		emit(agent.Event{Type: agent.EventRunInterrupted, Text: "cancelled before start"})
		return nil
	}
	input, err := userInputs(req)
	if err != nil {
		return fmt.Errorf("%s prompt: %w", h.opts.Label, err)
	}
	bin := req.Bin
	if bin == "" {
		bin = h.opts.Bin
	}
	args := append(append(append([]string{}, h.opts.Args...), "app-server"), req.Args...)
	r := &run{
		h:      h,
		req:    req,
		input:  input,
		parser: NewParser(h.opts.Provider),
		inter:  newInteractions(h.opts.Provider, h.opts.Label),
		policy: policyFor(req),
		calls:  map[int64]string{},
	}
	// The process is not tied to ctx: cancellation reaches the agent as
	// turn/interrupt; a kill is only the fallback.
	return procrun.Session{
		Provider:         h.opts.Provider,
		Spec:             procrun.Spec{Bin: bin, Args: args, Dir: req.Cwd, Env: h.ChildEnv(req.Env), Container: req.Container},
		Wire:             r,
		Responses:        req.Responses,
		Logger:           logger,
		InstallHint:      h.opts.InstallHint,
		InterruptTimeout: h.opts.StopGrace,
		ExitTimeout:      h.opts.ExitTimeout,
		NoResult:         fmt.Sprintf("%s app-server exited before the turn completed", h.opts.Label),
	}.Run(ctx, emit)
}

// policyFor is the decision applied to every server request when nobody
// from the chat can answer: "" means ask the chat.
func policyFor(req agent.RunRequest) agent.Decision {
	switch {
	case req.Approval == agent.ApprovalAccept:
		return agent.DecisionApprove
	case req.Responses != nil && (req.Approval == agent.ApprovalAsk || req.Approval == ""):
		return ""
	}
	return agent.DecisionDecline
}

// run is one app-server turn on a procrun.Session: the wire, called from
// the Session's goroutine only. c is the Session's Conn, the same for every
// callback (set by Start).
type run struct {
	h      *Harness
	c      *procrun.Conn
	req    agent.RunRequest
	input  []userInput
	parser *Parser
	inter  *interactions
	policy agent.Decision

	nextID        int64
	calls         map[int64]string // our pending request ids → method
	turnRequested bool
	interruptSent bool
	fatal         error
	notFound      error
}

var (
	_ procrun.Wire  = (*run)(nil)
	_ procrun.Ender = (*run)(nil)
	_ procrun.Timed = (*run)(nil)
)

// timerStart bounds initialize → thread → turn/start (Options.StartTimeout).
const timerStart = "start"

// Start sends initialize and arms the start deadline.
func (r *run) Start(c *procrun.Conn) error {
	r.c = c
	c.After(timerStart, r.h.opts.StartTimeout)
	r.call("initialize", map[string]any{
		"clientInfo":   map[string]string{"name": r.h.opts.ClientName, "title": "Threadline", "version": r.h.opts.ClientVersion},
		"capabilities": map[string]any{"experimentalApi": true},
	})
	return nil
}

// timerAuto prefixes the timer of a request's own deadline ("auto:<id>").
const timerAuto = "auto:"

// Timer fails a run whose turn did not start in time, and answers a
// request whose own deadline passed.
func (r *run) Timer(name string, c *procrun.Conn) {
	if id, ok := strings.CutPrefix(name, timerAuto); ok {
		if !r.ended() {
			r.apply(r.inter.autoResolved(id))
		}
		return
	}
	if name != timerStart || r.parser.TurnID() != "" || r.ended() {
		return
	}
	r.fail(fmt.Sprintf("%s app-server did not start the turn within %s", r.h.opts.Label, r.h.opts.StartTimeout))
	c.Kill()
}

// ended reports whether nothing more is expected from the turn.
func (r *run) ended() bool {
	return r.c.Terminal() != "" || r.fatal != nil || r.notFound != nil
}

// Line handles one app-server line; a session that does not exist ends the
// turn (Outcome reports it).
func (r *run) Line(line []byte, c *procrun.Conn) error {
	err := r.handleLine(line)
	if r.parser.TurnID() != "" {
		c.After(timerStart, 0)
	}
	if r.notFound != nil {
		c.Done()
	}
	return err
}

func (r *run) handleLine(line []byte) error {
	m, params, err := decodeLine(line)
	if err != nil {
		return err
	}
	switch m.Kind {
	case jsonrpc.KindResponse:
		r.handleResponse(&m)
	case jsonrpc.KindRequest:
		return r.handleRequest(&m, line)
	case jsonrpc.KindNotification:
		if r.c.Terminal() != "" {
			r.c.Logger().Debug("notification after the turn ended", "method", m.Method)
			return nil
		}
		if m.Method == "serverRequest/resolved" {
			var v resolvedParams
			if err := params.decode(m.Method, &v); err != nil {
				return err
			}
			for _, ev := range r.inter.resolvedByServer(v.RequestID) {
				r.c.Emit(ev)
			}
			return nil
		}
		evs, err := r.parser.parse(m.Method, params, line)
		if err != nil {
			r.c.Logger().Warn("stdout line skipped", "err", err, "method", m.Method, "excerpt", procrun.Excerpt(line, 256))
		}
		for _, ev := range evs {
			if ev.Type.Terminal() {
				for _, end := range r.inter.endAll() {
					r.c.Emit(end)
				}
			}
			r.c.Emit(ev)
		}
	}
	return nil
}

// handleRequest answers a server request (or asks the chat). A reused id
// of a pending request is returned: the Session fails the run.
func (r *run) handleRequest(m *jsonrpc.Message, line []byte) error {
	if r.ended() {
		r.c.Logger().Debug("server request after the turn ended, ignored", "method", m.Method, logkey.RequestID, string(m.ID))
		return nil
	}
	out, err := r.inter.request(m, line, r.parser, r.policy)
	if err != nil {
		if errors.Is(err, agent.ErrDuplicateRequest) {
			r.fatal = err
			return err
		}
		r.c.Logger().Warn("server request", "err", err, "method", m.Method)
	}
	r.apply(out)
	return nil
}

// Respond routes a chat answer to its server request. An answer that cannot
// be encoded (ErrBadAnswer) sends nothing: the request stays pending, a
// system event (agent.SystemAnswerRefused) says why, and the error is
// returned.
func (r *run) Respond(resp agent.InteractionResponse, c *procrun.Conn) error {
	out, err := r.inter.respond(resp)
	if errors.Is(err, ErrBadAnswer) {
		c.Emit(agent.Event{Type: agent.EventSystem, Subtype: agent.SystemAnswerRefused,
			Text:        fmt.Sprintf("The answer was not sent (%v); the request is still waiting for an answer.", err),
			Interaction: &agent.Interaction{ID: resp.InteractionID},
			Native:      &agent.Native{Provider: r.h.opts.Provider, Kind: r.inter.method(resp.InteractionID)}})
	}
	if err != nil {
		return err
	}
	r.apply(out)
	return nil
}

func (r *run) apply(out outcome) {
	for _, l := range out.lines {
		r.c.Write(l)
	}
	for _, ev := range out.events {
		r.c.Emit(ev)
	}
	for id, d := range out.autoResolve {
		r.c.After(timerAuto+id, d)
	}
	if out.interrupt {
		r.c.Stopping()
		r.interrupt()
	}
}

func (r *run) handleResponse(m *jsonrpc.Message) {
	id, err := strconv.ParseInt(string(m.ID), 10, 64)
	method, ok := r.calls[id]
	if err != nil || !ok {
		r.c.Logger().Warn("response to an unknown request id", logkey.RequestID, string(m.ID))
		return
	}
	delete(r.calls, id)
	if m.Error != nil {
		r.c.Logger().Debug("request failed", "method", method, "code", m.Error.Code, "message", m.Error.Message)
	}
	switch method {
	case "initialize":
		if m.Error != nil {
			r.fail(fmt.Sprintf("%s app-server initialize: %s", r.h.opts.Label, m.Error.Message))
			return
		}
		r.c.Write(jsonrpc.EncodeNotification("initialized"))
		if r.c.Cancelled() {
			r.c.CloseStdin()
			return
		}
		r.startThread()
	case "thread/start", "thread/resume", "thread/fork":
		if m.Error != nil {
			if method != "thread/start" && IsSessionNotFound(m.Error.Message) {
				r.notFound = fmt.Errorf("%s %s %s: %w: %s", r.h.opts.Label, method, r.req.ResumeID, agent.ErrSessionNotFound, m.Error.Message)
				return
			}
			r.fail(fmt.Sprintf("%s %s: %s", r.h.opts.Label, method, m.Error.Message))
			return
		}
		var res threadResult
		_ = json.Unmarshal(m.Result, &res)
		model := res.Model
		if model == "" {
			model = res.Thread.Model
		}
		if res.Thread.ID == "" {
			r.fail(fmt.Sprintf("%s %s returned no thread id", r.h.opts.Label, method))
			return
		}
		r.parser.SetThread(res.Thread.ID, model)
		known := r.req.ResumeID
		if r.req.Fork {
			known = ""
		}
		// A new thread, or the model of a resumed one: the chat shows the
		// model the agent reports.
		if res.Thread.ID != known || model != "" {
			r.c.Emit(agent.Event{Type: agent.EventSessionUpdated, SessionID: res.Thread.ID, Model: model,
				Native: &agent.Native{Provider: r.h.opts.Provider, Kind: method, ID: agent.JSONString(res.Thread.ID)}})
		}
		if r.c.Cancelled() {
			r.c.CloseStdin()
			return
		}
		r.startTurn(model)
	case "turn/start":
		if m.Error != nil {
			r.fail(fmt.Sprintf("%s turn/start: %s", r.h.opts.Label, m.Error.Message))
			return
		}
		var res turnResult
		_ = json.Unmarshal(m.Result, &res)
		if res.Turn.ID == "" {
			r.fail(fmt.Sprintf("%s turn/start returned no turn id", r.h.opts.Label))
			return
		}
		if r.parser.TurnID() == "" {
			r.parser.SetTurn(res.Turn.ID)
		}
		if r.c.Cancelled() {
			r.interrupt()
		}
	case "turn/interrupt":
		if m.Error != nil {
			r.c.Logger().Info("turn/interrupt refused", "message", m.Error.Message)
		}
	}
}

type threadParams struct {
	ThreadID       string         `json:"threadId,omitempty"`
	Model          string         `json:"model,omitempty"`
	ModelProvider  string         `json:"modelProvider,omitempty"`
	Cwd            string         `json:"cwd,omitempty"`
	ApprovalPolicy string         `json:"approvalPolicy,omitempty"`
	Sandbox        string         `json:"sandbox,omitempty"`
	Config         map[string]any `json:"config,omitempty"`
	ExcludeTurns   bool           `json:"excludeTurns,omitempty"`
}

func (r *run) startThread() {
	p := threadParams{
		Model:          r.req.Model,
		ModelProvider:  r.h.opts.ModelProvider,
		Cwd:            r.req.Cwd,
		ApprovalPolicy: r.h.opts.ApprovalPolicy,
		Sandbox:        r.req.Sandbox,
		Config:         threadConfig(r.h.opts.Config, r.req.MCPServers),
	}
	if p.Sandbox == "" {
		p.Sandbox = r.h.opts.Sandbox
	}
	method := "thread/start"
	if r.req.ResumeID != "" {
		method, p.ThreadID, p.ExcludeTurns = "thread/resume", r.req.ResumeID, true
		if r.req.Fork {
			method = "thread/fork"
		}
	}
	r.call(method, p)
}

// threadConfig is thread/start's config overrides: the options' with each
// of the run's MCP servers added under its own dotted keys
// (mcp_servers.<name>.command, .args, .env), so that the servers of the
// operator's config.toml stay. The values (a run's token) travel on the
// app-server's stdin, never on a command line.
func threadConfig(base map[string]any, servers []agent.MCPServer) map[string]any {
	if len(servers) == 0 {
		return base
	}
	out := make(map[string]any, len(base)+3*len(servers))
	maps.Copy(out, base)
	for _, s := range servers {
		key := "mcp_servers." + s.Name + "."
		args := s.Args
		if args == nil {
			args = []string{}
		}
		out[key+"command"], out[key+"args"], out[key+"env"] = s.Command, args, s.EnvMap()
	}
	return out
}

type userInput struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
	URL  string `json:"url,omitempty"`
}

type collaborationMode struct {
	Mode     string                `json:"mode"`
	Settings collaborationSettings `json:"settings"`
}

type collaborationSettings struct {
	Model                 string  `json:"model"`
	ReasoningEffort       *string `json:"reasoning_effort"`
	DeveloperInstructions *string `json:"developer_instructions"`
}

type turnStartParams struct {
	ThreadID          string             `json:"threadId"`
	Input             []userInput        `json:"input"`
	Model             string             `json:"model,omitempty"`
	Effort            string             `json:"effort,omitempty"`
	CollaborationMode *collaborationMode `json:"collaborationMode,omitempty"`
}

// userInputs is the prompt as turn/start input: the text, then each image as
// a data URL.
func userInputs(req agent.RunRequest) ([]userInput, error) {
	var in []userInput
	if req.Prompt != "" || len(req.Images) == 0 {
		in = append(in, userInput{Type: "text", Text: req.Prompt})
	}
	for _, img := range req.Images {
		if img.MediaType == "" || len(img.Data) == 0 {
			return nil, fmt.Errorf("image %q: missing media type or data", img.Name)
		}
		in = append(in, userInput{Type: "image", URL: "data:" + img.MediaType + ";base64," + base64.StdEncoding.EncodeToString(img.Data)})
	}
	return in, nil
}

// turnStartRequest is the turn/start request of a run on thread: the
// input, the model and effort, and the collaboration mode (plan or default;
// it is sticky on the thread, so it is always sent when a model is known).
func turnStartRequest(req agent.RunRequest, thread, threadModel string, in []userInput) turnStartParams {
	p := turnStartParams{ThreadID: thread, Input: in, Model: req.Model, Effort: req.Effort}
	model := req.Model
	if model == "" {
		model = threadModel
	}
	if model != "" {
		mode := "default"
		if req.Mode == agent.ModePlan {
			mode = "plan"
		}
		cm := &collaborationMode{Mode: mode, Settings: collaborationSettings{Model: model}}
		if req.Effort != "" {
			e := req.Effort
			cm.Settings.ReasoningEffort = &e
		}
		p.CollaborationMode = cm
	}
	return p
}

func (r *run) startTurn(threadModel string) {
	r.turnRequested = true
	r.call("turn/start", turnStartRequest(r.req, r.parser.ThreadID(), threadModel, r.input))
}

// Interrupt handles a cancelled run context: turn/interrupt once the turn
// is known; before turn/start the session is ended (stdin closed); while
// turn/start is in flight the interrupt follows its result. The Session
// kills the app-server after Options.StopGrace.
func (r *run) Interrupt(c *procrun.Conn) error {
	c.Logger().Info("run cancelled, interrupting the turn")
	if r.ended() {
		return nil
	}
	switch {
	case r.parser.TurnID() != "":
		r.interrupt()
	case !r.turnRequested:
		c.CloseStdin()
	}
	return nil
}

// interrupt sends turn/interrupt once, when the turn is known.
func (r *run) interrupt() {
	if r.interruptSent || r.ended() || r.parser.TurnID() == "" {
		return
	}
	r.interruptSent = true
	r.call("turn/interrupt", map[string]string{"threadId": r.parser.ThreadID(), "turnId": r.parser.TurnID()})
}

func (r *run) call(method string, params any) {
	r.nextID++
	b, err := jsonrpc.EncodeRequest(r.nextID, method, params)
	if err != nil {
		r.c.Logger().Error("encode request", "method", method, "err", err)
		return
	}
	r.calls[r.nextID] = method
	r.c.Write(b)
}

// fail ends the run with run.failed (a protocol-level failure).
func (r *run) fail(msg string) {
	if r.c.Terminal() != "" {
		return
	}
	for _, ev := range r.inter.endAll() {
		r.c.Emit(ev)
	}
	r.c.Emit(agent.Event{Type: agent.EventRunFailed, Text: msg})
}

// End closes the open server requests of a turn that ended without a
// terminal event (not for a missing session: nothing was asked there).
func (r *run) End(c *procrun.Conn) {
	if r.notFound != nil {
		return
	}
	for _, ev := range r.inter.endAll() {
		c.Emit(ev)
	}
}

// Outcome: a missing thread is agent.ErrSessionNotFound; a protocol
// violation fails with the label; a cancelled turn the app-server did not
// close is interrupted, saying whether it had to be killed. The rest is the
// Session's mapping.
func (r *run) Outcome(o procrun.Outcome, c *procrun.Conn) error {
	label := r.h.opts.Label
	switch {
	case r.notFound != nil:
		return r.notFound
	case o.Fatal != nil:
		c.Emit(agent.Event{Type: agent.EventRunFailed, Text: fmt.Sprintf("%s: %v", label, o.Fatal)})
		return fmt.Errorf("%w: %w", agent.ErrRunFailed, o.Fatal)
	case o.Terminal == "" && o.Cancelled:
		text := "interrupted"
		if o.Killed {
			text = "interrupted: the app-server was killed after the interrupt deadline"
		}
		c.Emit(agent.Event{Type: agent.EventRunInterrupted, Text: text})
	}
	return nil
}
