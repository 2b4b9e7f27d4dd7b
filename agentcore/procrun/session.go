// Session: the one interactive loop that runs an agent CLI over a sans-IO Wire.

package procrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// ErrNoNative is returned by Wire.Interrupt when the protocol has no native
// interrupt: the Session then sends the child SIGINT.
var ErrNoNative = errors.New("procrun: no native interrupt")

// ErrIdle is wrapped by Run's error when the agent wrote nothing for its
// idle timeout and was stopped.
var ErrIdle = errors.New("procrun: agent idle")

// ErrLineTooLong is wrapped by Run's error when a stdout line over
// MaxLineBytes was skipped.
var ErrLineTooLong = errors.New("procrun: output line too long")

type idleKey struct{}

// WithIdleTimeout returns ctx carrying the idle timeout of the Sessions run
// with it (see Session.IdleTimeout); d <= 0 disables the watchdog. The prompt
// service sets it from agent.RunRequest.IdleTimeout, so providers need not
// copy it.
func WithIdleTimeout(ctx context.Context, d time.Duration) context.Context {
	if d <= 0 {
		d = -1
	}
	return context.WithValue(ctx, idleKey{}, d)
}

// Wire is one CLI protocol without I/O: it turns stdout lines and answers
// into events and stdin lines through the Conn it is given, and is called
// from the Session's goroutine only.
type Wire interface {
	// Start writes the handshake and/or the prompt.
	Start(c *Conn) error
	// Line handles one stdout line (without its line ending), or one raw
	// chunk with Session.Chunks. The slice is only valid during the call
	// (its buffer is read into again): what the wire keeps, in its state
	// or in the events it emits, it copies. An error is logged and the line
	// skipped; an error wrapping agent.ErrDuplicateRequest fails the run and
	// kills the child.
	Line(line []byte, c *Conn) error
	// Respond routes an answer to a pending interaction (the Session has
	// already refused ids that are not pending). An error is logged.
	Respond(resp agent.InteractionResponse, c *Conn) error
	// Interrupt asks the CLI natively to stop the turn; ErrNoNative makes the
	// Session signal the child instead. The kill deadline is armed either way.
	Interrupt(c *Conn) error
	// Outcome is asked first once the child exited, with what the Session
	// knows. A non-nil error is Run's result as is (e.g. one wrapping
	// agent.ErrSessionNotFound); nil leaves the Session's mapping to decide,
	// after any events the wire emitted.
	Outcome(o Outcome, c *Conn) error
}

// Ender is a Wire that closes its turn natively when the child exited before
// any terminal event (settling retries, answering open requests). Open
// interactions it leaves are resolved turn_ended by the Session.
type Ender interface {
	End(c *Conn)
}

// Timed is a Wire with timers of its own (armed with Conn.After).
type Timed interface {
	Timer(name string, c *Conn)
}

// Outcome is what the Session knows when the child exited.
type Outcome struct {
	// Terminal is the terminal event emitted so far, "" if none.
	Terminal agent.EventType
	// Failure is the text of the run.failed emitted, if any.
	Failure string
	// Fatal is the protocol violation that stopped the run, if any.
	Fatal error
	// Cancelled reports that the run's context was cancelled (or the wire
	// called Conn.Stopping).
	Cancelled bool
	// Killed reports that the child was killed by the Session or the wire.
	Killed bool
	// ExitErr is Wait's error (a *ProcessError for a non-zero exit).
	ExitErr error
	// Stderr is the captured stderr tail.
	Stderr string
}

// Session runs one turn of an interactive CLI: it starts Spec with Start (so
// a relay in ctx and the isolation apply), reads stdout lines, feeds them to
// Wire, routes Responses, interrupts on cancellation and kills after a
// deadline, keeps the pending-request ledger and maps the exit to Run's
// result. Events pass an agent.Stream: a run has exactly one end.
type Session struct {
	// Provider names the agent in messages.
	Provider agent.ProviderID
	// Spec is the child; Stdin is forced on.
	Spec Spec
	// Wire is the protocol.
	Wire Wire
	// Responses carries the users' answers; nil means nobody answers.
	Responses <-chan agent.InteractionResponse
	// Logger is the run's logger, a provider's (ProviderLogger: its lines
	// carry the agent key); nil discards.
	Logger *slog.Logger
	// InstallHint is appended to a not-installed error.
	InstallHint string
	// InterruptTimeout is how long a cancelled run waits for the CLI to end
	// the turn before the child is killed; default 5 s.
	InterruptTimeout time.Duration
	// ExitTimeout is how long the child may live after its turn ended (and
	// after stdout closed) before it is killed; default InterruptTimeout,
	// negative never (a one-way CLI that finishes writing after its result).
	ExitTimeout time.Duration
	// NoResult is the run.failed text when the child exits without a
	// terminal event (the stderr tail is appended); default "<provider>
	// exited without a result".
	NoResult string
	// Interrupted is the run.interrupted text of a cancelled run whose CLI
	// ended without a terminal event; default "interrupted".
	Interrupted string
	// Chunks hands Wire.Line raw stdout chunks (Process.Chunks: blank lines
	// and line endings kept) instead of lines, for CLIs that print text.
	Chunks bool
	// IdleTimeout is how long the agent may write nothing on stdout (no
	// line, no chunk) while its turn runs before the turn is stopped like a
	// cancelled one (natively, killed after InterruptTimeout) and the run
	// fails saying why (ErrIdle). The clock pauses while an interaction
	// waits for an answer. 0 takes the run context's (WithIdleTimeout),
	// none when that is unset too; negative disables.
	IdleTimeout time.Duration
}

// Conn is a Session's side of the wire: what a Wire may do. It is used
// from the Session's goroutine only.
type Conn struct {
	s      *Session
	logger *slog.Logger
	proc   *Process
	out    agent.Stream

	pending []string // interaction ids requested and not resolved, in order
	closed  bool     // stdin closed
	// held are the stdin lines a Wire.Respond wrote, written to the child
	// only once its events were emitted (see respond); holding while it runs.
	held      [][]byte
	holding   bool
	holdClose bool // CloseStdin was called while holding
	done      bool // the turn is over: no more answers, exit deadline
	ended     bool // done was acted on

	cancelled bool
	killed    bool
	fatal     error

	deadline *time.Timer
	stopC    <-chan time.Time
	idle     *time.Timer      // the idle watchdog, made at its first start
	idleC    <-chan time.Time // idle.C while it runs, nil when off or paused
	idleText string           // set when the watchdog stopped the turn
	tooLong  []int            // sizes of the stdout lines skipped as over MaxLineBytes
	timers   map[string]*sessionTimer
	fired    chan *sessionTimer
	quit     chan struct{} // closed when the loop returns
}

type sessionTimer struct {
	name string
	t    *time.Timer
}

// Logger is the run's logger.
func (c *Conn) Logger() *slog.Logger { return c.logger }

// Write writes one stdin line. After stdin closed the line is dropped; a
// write error is logged.
func (c *Conn) Write(line []byte) {
	if c.closed {
		c.logger.Debug("stdin closed, line dropped", "bytes", len(line))
		return
	}
	if c.holding {
		c.held = append(c.held, bytes.Clone(line))
		return
	}
	if err := c.proc.WriteLine(line); err != nil {
		c.logger.Debug("write stdin", "err", err)
	}
}

// CloseStdin closes the child's stdin without ending the turn (a one-way
// CLI that reads its prompt to EOF).
func (c *Conn) CloseStdin() {
	if c.holding {
		c.holdClose = true
		return
	}
	if !c.closed {
		c.closed = true
		_ = c.proc.CloseStdin()
	}
}

// Emit passes ev on unless the run already ended. The ledger follows
// interaction.requested and interaction.resolved: a requested id that is
// still pending is a protocol violation (agent.ErrDuplicateRequest), and
// before the terminal event every interaction still pending is resolved
// turn_ended.
func (c *Conn) Emit(ev agent.Event) {
	if c.out.Terminal != "" {
		c.out.Send(ev) // dropped and logged by the Stream
		return
	}
	switch {
	case ev.Type == agent.EventInteractionRequested && ev.Interaction != nil:
		id := ev.Interaction.ID
		if c.isPending(id) {
			c.Fail(fmt.Errorf("%w: interaction %s", agent.ErrDuplicateRequest, id))
			return
		}
		c.pending = append(c.pending, id)
	case ev.Type == agent.EventInteractionResolved && ev.Resolution != nil:
		c.resolve(ev.Resolution.InteractionID)
	case ev.Type.Terminal():
		c.endPending()
		ev = c.terminal(ev)
	}
	c.out.Send(ev)
}

// terminal is the terminal event as the Session reports it: a turn stopped
// by the idle watchdog fails with the reason, and a turn that lost an output
// line over MaxLineBytes does not complete (it fails with the lost sizes
// appended to any failure text); a cancelled turn stays interrupted.
func (c *Conn) terminal(ev agent.Event) agent.Event {
	switch {
	case c.idleText != "" && ev.Type != agent.EventRunCompleted:
		return agent.Event{Type: agent.EventRunFailed, Text: c.idleText}
	case len(c.tooLong) > 0 && ev.Type == agent.EventRunCompleted:
		return agent.Event{Type: agent.EventRunFailed, Text: c.tooLongText(), Usage: ev.Usage}
	case len(c.tooLong) > 0 && ev.Type == agent.EventRunFailed:
		ev.Text += "; " + c.tooLongText()
	}
	return ev
}

// tooLongText says which output was lost.
func (c *Conn) tooLongText() string {
	if len(c.tooLong) == 1 {
		return fmt.Sprintf("an output line of %d bytes was over the %d MiB limit and was skipped", c.tooLong[0], MaxLineBytes>>20)
	}
	return fmt.Sprintf("%d output lines (%v bytes) were over the %d MiB limit and were skipped", len(c.tooLong), c.tooLong, MaxLineBytes>>20)
}

// Terminal is the terminal event emitted so far, "" if none.
func (c *Conn) Terminal() agent.EventType { return c.out.Terminal }

// Pending reports whether interaction id is requested and unresolved.
func (c *Conn) Pending(id string) bool { return c.isPending(id) }

// Done ends the turn: once the current callback returns, stdin is closed,
// answers are no longer taken and the child has ExitTimeout to exit. The
// first terminal event does the same.
func (c *Conn) Done() { c.done = true }

// Stopping marks the run cancelled (the user declined in a way that stops
// the turn) and arms the kill deadline.
func (c *Conn) Stopping() {
	c.cancelled = true
	c.arm(c.s.InterruptTimeout)
}

// Cancelled reports whether the run is being stopped.
func (c *Conn) Cancelled() bool { return c.cancelled }

// Kill kills the child now; the run ends when its stdout closes.
func (c *Conn) Kill() {
	c.killed = true
	c.done = true
	_ = c.proc.Kill()
}

// Fail stops the run for a protocol violation: the child is killed and the
// run fails with err (the first one wins).
func (c *Conn) Fail(err error) {
	if c.fatal == nil {
		c.fatal = err
		c.logger.Error("protocol violation, stopping the agent", "err", err)
	}
	c.Kill()
}

// After arms (or re-arms) the wire timer name to fire after d; d <= 0 stops
// it. A Timed wire's Timer is called when it fires.
func (c *Conn) After(name string, d time.Duration) {
	if old := c.timers[name]; old != nil {
		old.t.Stop()
		delete(c.timers, name)
	}
	if d <= 0 {
		return
	}
	st := &sessionTimer{name: name}
	fired, quit := c.fired, c.quit
	st.t = time.AfterFunc(d, func() {
		select {
		case fired <- st:
		case <-quit:
		}
	})
	c.timers[name] = st
}

func (c *Conn) isPending(id string) bool {
	for _, p := range c.pending {
		if p == id {
			return true
		}
	}
	return false
}

func (c *Conn) resolve(id string) {
	for i, p := range c.pending {
		if p == id {
			c.pending = append(c.pending[:i], c.pending[i+1:]...)
			return
		}
	}
}

// endPending is the one turn_ended rule: what is still pending when the
// turn ends is resolved turn_ended.
func (c *Conn) endPending() {
	for _, id := range c.pending {
		c.out.Send(agent.Event{Type: agent.EventInteractionResolved,
			Resolution: &agent.Resolution{InteractionID: id, Status: agent.StatusTurnEnded}})
	}
	c.pending = nil
}

// arm arms the kill deadline once.
func (c *Conn) arm(d time.Duration) {
	if c.deadline == nil {
		c.deadline = time.NewTimer(d)
		c.stopC = c.deadline.C
	}
}

// Run starts the child and runs the turn to its end. See the agent package
// doc for the contract: a cancelled ctx before the start emits
// run.interrupted; a start error is returned (ErrNotInstalled with the
// install hint); otherwise exactly one terminal event is emitted.
func (s Session) Run(ctx context.Context, emit func(agent.Event)) error {
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	if s.InterruptTimeout <= 0 {
		s.InterruptTimeout = 5 * time.Second
	}
	if s.ExitTimeout == 0 {
		s.ExitTimeout = s.InterruptTimeout
	}
	if s.Interrupted == "" {
		s.Interrupted = "interrupted"
	}
	if s.NoResult == "" {
		s.NoResult = nameOf(s.Provider, s.Spec.Bin) + " exited without a result"
	}
	if s.IdleTimeout == 0 {
		s.IdleTimeout, _ = ctx.Value(idleKey{}).(time.Duration)
	}
	if ctx.Err() != nil {
		emit(agent.Event{Type: agent.EventRunInterrupted, Text: "cancelled before start"})
		return nil
	}
	spec := s.Spec
	spec.Stdin = true
	// The child is not tied to ctx: cancellation reaches it natively.
	proc, err := Start(context.WithoutCancel(ctx), s.Logger, spec)
	if err != nil {
		if errors.Is(err, agent.ErrNotInstalled) && s.InstallHint != "" {
			return fmt.Errorf("%w (install: %s)", err, s.InstallHint)
		}
		return err
	}
	c := &Conn{
		s: &s, logger: s.Logger, proc: proc,
		out:    agent.Stream{Emit: emit, Log: s.Logger},
		timers: map[string]*sessionTimer{},
		fired:  make(chan *sessionTimer),
		quit:   make(chan struct{}),
	}
	return c.loop(ctx)
}

func (c *Conn) loop(ctx context.Context) error {
	s := c.s
	batches := make(chan *readBatch, 4)
	readDone := make(chan error, 1)
	go func() {
		readDone <- c.read(batches)
		close(batches)
	}()
	defer func() {
		close(c.quit)
		if c.deadline != nil {
			c.deadline.Stop()
		}
		c.pauseIdle()
		for _, t := range c.timers {
			t.t.Stop()
		}
	}()

	if err := s.Wire.Start(c); err != nil {
		c.Fail(err)
	}
	c.settle()
	c.watchIdle(false)
	responses := s.Responses
	ctxDone := ctx.Done()
	for batches != nil {
		if c.ended {
			responses = nil
		}
		select {
		case b, ok := <-batches:
			if !ok {
				batches = nil
				break
			}
			c.batch(b)
			b.release()
			c.pauseIdle() // output: the idle clock restarts below
		case resp, ok := <-responses:
			if !ok {
				responses = nil
				break
			}
			c.respond(resp)
		case <-ctxDone:
			ctxDone = nil
			c.interrupt()
		case st := <-c.fired:
			if c.timers[st.name] == st {
				delete(c.timers, st.name)
				if w, ok := s.Wire.(Timed); ok {
					w.Timer(st.name, c)
				}
			}
		case <-c.stopC:
			c.stopC = nil
			c.logger.Warn("agent did not stop in time, killing")
			c.Kill()
		case <-c.idleC:
			c.idleC = nil
			c.idleText = fmt.Sprintf("%s wrote nothing for %s; stopped (idle_timeout)", nameOf(s.Provider, s.Spec.Bin), s.IdleTimeout)
			c.logger.Warn("agent idle, stopping it", "idle_timeout", s.IdleTimeout)
			c.interrupt()
		}
		c.settle()
		c.watchIdle(batches == nil)
	}
	if err := <-readDone; err != nil {
		c.logger.Warn("read stdout", "err", err)
	}
	return c.finish(c.wait())
}

// read reads stdout until EOF and sends what each read completed (see
// readLines), or the raw chunks with Session.Chunks.
func (c *Conn) read(out chan<- *readBatch) error {
	return c.proc.readStdout(func(r io.Reader) error {
		if c.s.Chunks {
			return sendChunks(r, out)
		}
		return readLines(r, MaxLineBytes, batchBytes, out)
	})
}

// batch hands the wire what the reader sent, in order: the skipped line
// first, then every line (or the chunk).
func (c *Conn) batch(b *readBatch) {
	if b.tooLong > 0 {
		c.lineTooLong(b.tooLong)
		c.settle()
	}
	if c.s.Chunks {
		if len(b.buf) > 0 {
			c.line(b.buf)
			c.settle()
		}
		return
	}
	splitLines(b.buf, MaxLineBytes, c.batchLine, c.batchTooLong)
}

// batchLine and batchTooLong are batch's handlers for splitLines.
func (c *Conn) batchLine(line []byte) {
	c.line(line)
	c.settle()
}

func (c *Conn) batchTooLong(n int) {
	c.lineTooLong(n)
	c.settle()
}

// watchIdle runs the idle watchdog while the turn runs and no interaction
// waits for an answer, and pauses it otherwise; a running clock is left
// alone (output restarts it by pausing it first).
func (c *Conn) watchIdle(eof bool) {
	if c.s.IdleTimeout <= 0 {
		return
	}
	if eof || c.ended || c.cancelled || c.out.Terminal != "" || len(c.pending) > 0 {
		c.pauseIdle()
		return
	}
	switch {
	case c.idleC != nil:
	case c.idle == nil:
		c.idle = time.NewTimer(c.s.IdleTimeout)
		c.idleC = c.idle.C
	default:
		c.idle.Reset(c.s.IdleTimeout)
		c.idleC = c.idle.C
	}
}

// pauseIdle stops the idle clock (the timer is kept for the next start).
func (c *Conn) pauseIdle() {
	if c.idleC != nil {
		c.idle.Stop()
		c.idleC = nil
	}
}

// lineTooLong reports a stdout line Each skipped as over MaxLineBytes: in
// the chat now (a system event, subtype "error") and in the run's end.
func (c *Conn) lineTooLong(n int) {
	c.tooLong = append(c.tooLong, n)
	text := fmt.Sprintf("an output line of %d bytes was over the %d MiB limit and was skipped", n, MaxLineBytes>>20)
	c.logger.Warn("stdout line over the limit skipped", "bytes", n, "max", MaxLineBytes)
	c.Emit(agent.Event{Type: agent.EventSystem, Subtype: "error", Text: text})
}

// wait waits for the child after stdout closed, killing it after
// ExitTimeout (a child that closed stdout but lingers).
func (c *Conn) wait() error {
	if c.s.ExitTimeout < 0 {
		return c.proc.Wait()
	}
	waited := make(chan struct{})
	go func() {
		t := time.NewTimer(c.s.ExitTimeout)
		defer t.Stop()
		select {
		case <-waited:
		case <-t.C:
			_ = c.proc.Kill()
		}
	}()
	err := c.proc.Wait()
	close(waited)
	return err
}

func (c *Conn) line(line []byte) {
	err := c.s.Wire.Line(line, c)
	switch {
	case err == nil:
	case errors.Is(err, agent.ErrDuplicateRequest):
		c.Fail(err)
	default:
		c.logger.Warn("stdout line skipped", "err", err, "bytes", len(line), "excerpt", Excerpt(line, excerptBytes))
	}
}

func (c *Conn) respond(resp agent.InteractionResponse) {
	if !c.isPending(resp.InteractionID) {
		c.logger.Warn("interaction response ignored", "err", agent.ErrUnknownInteraction, "interaction_id", resp.InteractionID)
		return
	}
	// The answer reaches the child only after the events the wire emitted
	// for it (its interaction.resolved) were handled: the service persists a
	// resolution before it returns, so a bot killed in between leaves either
	// a recorded decision the agent has not seen yet (a reattach sends it) or
	// neither, never an agent acting on a decision no one recorded (which a
	// reattach would leave open to a different answer).
	c.holding = true
	err := c.s.Wire.Respond(resp, c)
	c.holding = false
	held, closeStdin := c.held, c.holdClose
	c.held, c.holdClose = nil, false
	for _, l := range held {
		c.Write(l)
	}
	if closeStdin {
		c.CloseStdin()
	}
	if err != nil {
		c.logger.Warn("interaction response ignored", "err", err, "interaction_id", resp.InteractionID)
	}
}

// interrupt stops the turn: natively while it runs, by SIGINT when the wire
// has no native interrupt, then a kill after InterruptTimeout.
func (c *Conn) interrupt() {
	c.cancelled = true
	if c.out.Terminal == "" && !c.ended {
		c.logger.Info("interrupting the agent")
		err := c.s.Wire.Interrupt(c)
		switch {
		case errors.Is(err, ErrNoNative):
			_ = c.proc.Signal(interruptSignal)
		case err != nil:
			c.logger.Warn("interrupt", "err", err)
		}
	}
	c.arm(c.s.InterruptTimeout)
}

// settle acts on the end of the turn once per run.
func (c *Conn) settle() {
	if c.ended || (!c.done && c.out.Terminal == "") {
		return
	}
	c.ended = true
	c.CloseStdin()
	if c.s.ExitTimeout > 0 {
		c.arm(c.s.ExitTimeout)
	}
}

// finish is the one outcome mapping.
func (c *Conn) finish(exitErr error) error {
	s := c.s
	if c.out.Terminal == "" {
		if w, ok := s.Wire.(Ender); ok {
			w.End(c)
		}
	}
	o := Outcome{
		Terminal: c.out.Terminal, Failure: c.out.Failure, Fatal: c.fatal,
		Cancelled: c.cancelled, Killed: c.killed, ExitErr: exitErr, Stderr: c.proc.Stderr(),
	}
	if err := s.Wire.Outcome(o, c); err != nil {
		return err
	}
	switch t := c.out.Terminal; {
	case c.fatal != nil:
		c.Emit(agent.Event{Type: agent.EventRunFailed, Text: c.fatal.Error()})
		return fmt.Errorf("%w: %w", agent.ErrRunFailed, c.fatal)
	case c.idleText != "" && t != agent.EventRunCompleted:
		if t == "" {
			c.Emit(agent.Event{Type: agent.EventRunFailed, Text: c.idleText})
		}
		return fmt.Errorf("%w: %w: %s", agent.ErrRunFailed, ErrIdle, c.idleText)
	case len(c.tooLong) > 0 && t == agent.EventRunFailed:
		// Emit made the turn's end say so (see terminal).
		return fmt.Errorf("%w: %w: %s", agent.ErrRunFailed, ErrLineTooLong, c.out.Failure)
	case t == agent.EventRunCompleted:
		if exitErr != nil && !c.killed && !c.cancelled {
			c.logger.Warn("agent exited non-zero after a completed turn", "err", exitErr)
		}
		return nil
	case t == agent.EventRunInterrupted:
		return nil
	case t == agent.EventRunFailed:
		if exitErr != nil {
			return fmt.Errorf("%w: %s: %w", agent.ErrRunFailed, c.out.Failure, exitErr)
		}
		return fmt.Errorf("%w: %s", agent.ErrRunFailed, c.out.Failure)
	case c.cancelled:
		c.Emit(agent.Event{Type: agent.EventRunInterrupted, Text: s.Interrupted})
		return nil
	}
	msg := s.NoResult
	if tail := StderrTail(o.Stderr, 512); tail != "" {
		msg += ": " + tail
	}
	c.Emit(agent.Event{Type: agent.EventRunFailed, Text: msg})
	if exitErr != nil {
		return fmt.Errorf("%w: %w", agent.ErrRunFailed, exitErr)
	}
	return fmt.Errorf("%w: %s", agent.ErrRunFailed, msg)
}
