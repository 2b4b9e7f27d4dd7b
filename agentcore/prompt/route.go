// Routing between replicas: an answer or a cancel that lands on a replica
// other than the one running the run is published to the owner, which
// delivers it to its local run exactly as a local call would, and replies.
//
// Every replica with a Router listens on its own channel ("replica:" + its
// owner name) for requests and for the replies to its own requests. A request
// names the run it targets (the run id the runs table gave for the chat), so
// a cancel or an answer never reaches a later run of the chat. The sender
// waits for the reply up to Options.RouteTimeout; no reply (the owner died, or
// the notification was lost while its listen connection was down) is
// ErrRouteTimeout and nothing is retried: the caller tells the user.
//
// Secret answers are never routed: a NOTIFY payload passes through Postgres,
// which may log it (log_statement, auto_explain, a failing statement's text).
// RespondInteraction refuses them with ErrSecretNotRouted before anything is
// sent; the interaction stays pending and answerable, and the user answers
// again (the answer that reaches the owner replica is delivered locally).
// Non-secret answers are routed with their values.

package prompt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/logkey"
)

// Router carries requests between replicas sharing one database (store.Router
// over Postgres LISTEN/NOTIFY). SQLite installs are single-process: no router.
type Router interface {
	// Publish sends payload to whoever listens on channel now, at most once.
	Publish(ctx context.Context, channel string, payload []byte) error
	// Listen calls handle with every payload published on channel until ctx
	// ends; it returns once listening. handle must not block for long.
	Listen(ctx context.Context, channel string, handle func(payload []byte)) error
	// RunOwner returns the chat's running run and the replica owning it,
	// both empty when the chat has none.
	RunOwner(ctx context.Context, chatID agent.ChatID) (runID agent.RunID, owner string, err error)
}

// Errors of routed requests.
var (
	// ErrSecretNotRouted refuses a secret answer for a run of another replica.
	ErrSecretNotRouted = errors.New("secret answers are not sent between replicas")
	// ErrRouteTimeout is returned when the owner replica did not reply in time.
	ErrRouteTimeout = errors.New("the replica running this run did not reply")
	// ErrRouteTooLarge refuses a request over MaxRoutePayload.
	ErrRouteTooLarge = errors.New("request too large to route to the replica running the run")
	// ErrNotRouting is returned when a routed request is needed but Listen
	// was not called (no channel for the reply).
	ErrNotRouting = errors.New("this replica does not route requests")
)

// MaxRoutePayload bounds one routed message (Postgres NOTIFY's limit is 8000 bytes).
const MaxRoutePayload = 7999

// DefaultRouteTimeout is how long a routed request waits for its reply.
const DefaultRouteTimeout = 10 * time.Second

const (
	routeAnswer = "answer"
	routeCancel = "cancel"
	routeReply  = "reply"

	// Reply codes mapped back to the sentinel errors.
	codeUnknown   = "unknown_interaction"
	codeResolved  = "interaction_resolved"
	codeNotActive = "run_not_active"
	codeKind      = "answer_kind"
	codeNotOption = "not_an_option"
	codeFailed    = "failed"
)

// routeMsg is one routed request or reply. No secret value is ever in it.
type routeMsg struct {
	Kind string       `json:"k"`
	ID   string       `json:"id"`
	From string       `json:"from,omitempty"`
	Chat agent.ChatID `json:"chat,omitempty"`
	Run  agent.RunID  `json:"run,omitempty"`

	Interaction string            `json:"interaction,omitempty"`
	Decision    agent.Decision    `json:"decision,omitempty"`
	Option      string            `json:"option,omitempty"`
	By          string            `json:"by,omitempty"`
	Answers     map[string]string `json:"answers,omitempty"`

	Code string `json:"code,omitempty"`
	Err  string `json:"err,omitempty"`
}

func replicaChannel(owner string) string { return "replica:" + owner }

// Listen starts serving routed requests for this replica's runs and receiving
// the replies to its own, until ctx ends. Without a Router it does nothing.
func (s *Service) Listen(ctx context.Context) error {
	if s.opts.Router == nil {
		return nil
	}
	if s.opts.Owner == "" {
		return errors.New("prompt: routing needs Options.Owner")
	}
	if err := s.opts.Router.Listen(ctx, replicaChannel(s.opts.Owner), s.onRouted); err != nil {
		return fmt.Errorf("prompt: listen for routed requests: %w", err)
	}
	s.routeMu.Lock()
	s.routing = true
	s.routeMu.Unlock()
	context.AfterFunc(ctx, func() {
		s.routeMu.Lock()
		s.routing = false
		s.routeMu.Unlock()
	})
	return nil
}

// onRouted handles one payload on this replica's channel.
func (s *Service) onRouted(payload []byte) {
	var m routeMsg
	if err := json.Unmarshal(payload, &m); err != nil {
		s.log.Warn("routed message: malformed", "err", err)
		return
	}
	switch m.Kind {
	case routeReply:
		s.routeMu.Lock()
		ch := s.waiting[m.ID]
		s.routeMu.Unlock()
		if ch != nil {
			select {
			case ch <- m:
			default:
			}
		}
	case routeAnswer, routeCancel:
		go s.serveRouted(m)
	default:
		s.log.Warn("routed message: unknown kind", "kind", m.Kind)
	}
}

// serveRouted delivers a routed request to the local run and replies.
func (s *Service) serveRouted(m routeMsg) {
	timeout := s.routeTimeout()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var err error
	switch m.Kind {
	case routeAnswer:
		err = s.respondLocal(ctx, m.Chat, m.Run, agent.InteractionResponse{
			InteractionID: m.Interaction, Decision: m.Decision, OptionID: m.Option, Answers: m.Answers, By: m.By,
		})
	case routeCancel:
		if r, ok := s.Active(m.Chat); ok && r.ID == m.Run {
			r.cancel()
		} else {
			err = fmt.Errorf("%w: run %s of chat %s", ErrRunNotActive, m.Run, m.Chat)
		}
	}
	s.log.Info("routed request served", "kind", m.Kind, logkey.ChatID, m.Chat, logkey.RunID, m.Run, "from", m.From, "err", err)
	reply := routeMsg{Kind: routeReply, ID: m.ID}
	switch {
	case err == nil:
	case errors.Is(err, ErrUnknownInteraction):
		reply.Code = codeUnknown
	case errors.Is(err, ErrInteractionResolved):
		reply.Code = codeResolved
	case errors.Is(err, ErrRunNotActive):
		reply.Code = codeNotActive
	case errors.Is(err, ErrAnswerKind):
		reply.Code = codeKind
	case errors.Is(err, ErrNotAnOption):
		reply.Code = codeNotOption
	default:
		reply.Code = codeFailed
	}
	if err != nil {
		reply.Err = err.Error()
	}
	b, _ := json.Marshal(reply)
	if perr := s.opts.Router.Publish(ctx, replicaChannel(m.From), b); perr != nil {
		s.log.Warn("routed request: reply", logkey.ChatID, m.Chat, logkey.RunID, m.Run, "to", m.From, "err", perr)
	}
}

func (s *Service) routeTimeout() time.Duration {
	if s.opts.RouteTimeout > 0 {
		return s.opts.RouteTimeout
	}
	return DefaultRouteTimeout
}

// remoteOwner returns the replica owning runID of chatID when it is not this
// one; "" when the run is not running elsewhere (or there is no router).
func (s *Service) remoteOwner(ctx context.Context, chatID agent.ChatID, runID agent.RunID) (string, error) {
	if s.opts.Router == nil {
		return "", nil
	}
	id, owner, err := s.opts.Router.RunOwner(ctx, chatID)
	if err != nil {
		return "", fmt.Errorf("prompt: find the owner of chat %s's run: %w", chatID, err)
	}
	if id == "" || owner == "" || owner == s.opts.Owner || (runID != "" && id != runID) {
		return "", nil
	}
	return owner, nil
}

// routeAnswer sends an answer to the owner of a run that is not local. It
// reports false when the run is not running on another replica either.
func (s *Service) routeAnswer(ctx context.Context, chatID agent.ChatID, runID agent.RunID, resp agent.InteractionResponse) (bool, error) {
	owner, err := s.remoteOwner(ctx, chatID, runID)
	if err != nil || owner == "" {
		return err != nil, err
	}
	if resp.Secret {
		return true, fmt.Errorf("%w: run %s of chat %s runs on replica %s and this answer is secret, so it was not sent; answer again (the request is still open)",
			ErrSecretNotRouted, runID, chatID, owner)
	}
	return true, s.request(ctx, owner, routeMsg{
		Kind: routeAnswer, Chat: chatID, Run: runID,
		Interaction: resp.InteractionID, Decision: resp.Decision, Option: resp.OptionID, By: resp.By, Answers: resp.Answers,
	})
}

// request publishes m to owner and waits for the reply.
func (s *Service) request(ctx context.Context, owner string, m routeMsg) error {
	m.ID, m.From = uuid.NewString(), s.opts.Owner
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if len(b) > MaxRoutePayload {
		return fmt.Errorf("%w: %d bytes (at most %d)", ErrRouteTooLarge, len(b), MaxRoutePayload)
	}
	ch := make(chan routeMsg, 1)
	s.routeMu.Lock()
	if !s.routing {
		s.routeMu.Unlock()
		return fmt.Errorf("%w: run %s of chat %s runs on replica %s", ErrNotRouting, m.Run, m.Chat, owner)
	}
	s.waiting[m.ID] = ch
	s.routeMu.Unlock()
	defer func() {
		s.routeMu.Lock()
		delete(s.waiting, m.ID)
		s.routeMu.Unlock()
	}()
	if err := s.opts.Router.Publish(ctx, replicaChannel(owner), b); err != nil {
		return fmt.Errorf("prompt: route %s to replica %s: %w", m.Kind, owner, err)
	}
	t := time.NewTimer(s.routeTimeout())
	defer t.Stop()
	select {
	case reply := <-ch:
		var sentinel error
		switch reply.Code {
		case "":
			return nil
		case codeUnknown:
			sentinel = ErrUnknownInteraction
		case codeResolved:
			sentinel = ErrInteractionResolved
		case codeNotActive:
			sentinel = ErrRunNotActive
		case codeKind:
			sentinel = ErrAnswerKind
		case codeNotOption:
			// The owner's error names the question and its options.
			if detail := detailOf(reply.Err); detail != "" {
				return fmt.Errorf("%w (replica %s): %s", ErrNotAnOption, owner, detail)
			}
			return fmt.Errorf("%w (replica %s: %s)", ErrNotAnOption, owner, reply.Err)
		default:
			return fmt.Errorf("prompt: replica %s: %s", owner, reply.Err)
		}
		return fmt.Errorf("%w (replica %s: %s)", sentinel, owner, reply.Err)
	case <-t.C:
		return fmt.Errorf("%w: replica %s, %s of run %s, after %s", ErrRouteTimeout, owner, m.Kind, m.Run, s.routeTimeout())
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stop cancels the chat's running run, on this replica or, through the
// Router, on the replica that owns it. Nothing running is ErrRunNotActive.
func (s *Service) Stop(ctx context.Context, chatID agent.ChatID) error {
	if r, ok := s.Active(chatID); ok {
		r.cancel()
		return nil
	}
	if s.opts.Router != nil {
		id, owner, err := s.opts.Router.RunOwner(ctx, chatID)
		if err != nil {
			return fmt.Errorf("prompt: find the owner of chat %s's run: %w", chatID, err)
		}
		if id != "" && owner != "" && owner != s.opts.Owner {
			return s.request(ctx, owner, routeMsg{Kind: routeCancel, Chat: chatID, Run: id})
		}
	}
	return fmt.Errorf("%w: chat %s has no running run", ErrRunNotActive, chatID)
}
