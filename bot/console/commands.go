// The console's side of the chat commands: /queue lists the messages typed
// while a turn runs (the terminal's own queue), /agent takes only an agent
// the registry detects as ready here, /model only a model the agent lists
// when it lists its models, and /status adds the effort and the agent's
// native session to chatops' line.

package console

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/store"
)

// AgentCatalog is the agent registry's detection as `threadline agents`
// reports it (*agentset.Set).
type AgentCatalog interface {
	// Probe detects every agent.
	Probe(ctx context.Context, log *slog.Logger) []registry.Report
	// ProbeOne detects one agent; ok is false for an unknown id.
	ProbeOne(ctx context.Context, id string, log *slog.Logger) (registry.Report, bool)
}

// ChatSessions reads a chat's record with its agents' native sessions
// (*store.Store).
type ChatSessions interface {
	GetChat(ctx context.Context, id string) (store.Chat, error)
}

// consoleCommand runs the part of a command the console answers itself;
// handled says the command is done (its answer shown), else note, when set,
// is added to chatops' answer.
func (s *session) consoleCommand(ctx context.Context, cmd chatops.Command) (handled bool, note string) {
	switch cmd.Name {
	case "queue":
		s.r.line(s.queueCommand(cmd.Arg))
		return true, ""
	case "agent":
		if msg, ok := s.checkAgent(ctx, cmd.Arg); !ok {
			s.r.line(msg)
			return true, ""
		}
	case "model":
		msg, ok := s.checkModel(ctx, cmd.Arg)
		if !ok {
			s.r.line(msg)
			return true, ""
		}
		return false, msg
	}
	return false, ""
}

// queueCommand lists the messages waiting for the running turn, or (clear)
// drops them.
func (s *session) queueCommand(arg string) string {
	switch arg {
	case "":
		if len(s.queue) == 0 {
			return "Nothing is queued: a message typed while a turn runs waits here and is sent when the turn ends."
		}
		var sb strings.Builder
		fmt.Fprintf(&sb, "Queued (%d), sent in this order when the turn ends:", len(s.queue))
		for i, q := range s.queue {
			fmt.Fprintf(&sb, "\n  %d. %s", i+1, oneLine(q.text, 200))
		}
		sb.WriteString("\n/queue clear drops them; /stop stops the turn and drops them.")
		return sb.String()
	case "clear":
		n := len(s.queue)
		s.queue = nil
		if n == 0 {
			return "Nothing is queued."
		}
		return fmt.Sprintf("Dropped %d queued message(s); the running turn goes on (/stop stops it).", n)
	}
	return "Usage: /queue lists the waiting messages, /queue clear drops them."
}

// checkAgent refuses an agent the registry does not detect as ready here,
// naming the ready ones. A project's chat runs its agent in the project's
// container, which the host's detection does not see: chatops checks it.
func (s *session) checkAgent(ctx context.Context, id string) (string, bool) {
	if s.Agents == nil || id == "" || s.chat.Project != "" {
		return "", true
	}
	reports := s.Agents.Probe(ctx, s.Log)
	var ids, readyIDs []string
	var found *registry.Report
	for i, r := range reports {
		ids = append(ids, r.ID)
		if ready(r) {
			readyIDs = append(readyIDs, r.ID)
		}
		if r.ID == id {
			found = &reports[i]
		}
	}
	if found != nil && ready(*found) {
		return "", true
	}
	readyList := "none (threadline agents --all lists them with their install commands)"
	if len(readyIDs) > 0 {
		readyList = strings.Join(readyIDs, ", ")
	}
	switch {
	case found == nil:
		return fmt.Sprintf("There is no such agent here. Valid agents: %s. Ready here: %s. Nothing was changed.", strings.Join(ids, ", "), readyList), false
	case found.Status == registry.StatusMissing:
		msg := fmt.Sprintf("%s is not installed", id)
		if found.InstallHint != "" {
			msg += " (install: " + found.InstallHint + ")"
		}
		return fmt.Sprintf("%s. Ready here: %s. Nothing was changed.", msg, readyList), false
	}
	why := string(found.Status)
	if p := notReady(*found); p != "" {
		why = p
	}
	return fmt.Sprintf("%s is not ready here: %s. Ready here: %s. Nothing was changed.", id, why, readyList), false
}

// detectedOnly is how agentset.Set.Probe marks an agent this build cannot
// run.
const detectedOnly = "detected only:"

// ready reports whether the registry detects the agent as one a run can
// start: found and working, with a runner in this build.
func ready(r registry.Report) bool { return r.Status == registry.StatusReady && notReady(r) == "" }

// notReady is the problem that keeps a detected agent from running, or "".
func notReady(r registry.Report) string {
	for _, p := range r.Problems {
		if strings.HasPrefix(p, detectedOnly) {
			return p
		}
	}
	if r.Status != registry.StatusReady && len(r.Problems) > 0 {
		return r.Problems[0]
	}
	return ""
}

// checkModel refuses a model the chat's agent does not list when it lists
// its models (live, or the operator's list); when it cannot, any model is
// taken, and note says it was not checked.
func (s *session) checkModel(ctx context.Context, model string) (note string, ok bool) {
	if s.Agents == nil || model == "" || s.chat.Project != "" {
		return "", true
	}
	ch, err := s.Bot.Chat(ctx, s.chat.ID)
	if err != nil {
		return "error: " + err.Error(), false
	}
	r, known := s.Agents.ProbeOne(ctx, ch.Agent, s.Log)
	if !known {
		return "", true
	}
	listed := len(r.Models) > 0 && (r.ModelSource == registry.ModelsLive || r.ModelSource == registry.ModelsConfig)
	if !listed {
		return fmt.Sprintf("(%s does not list its models here, so %s was taken as given: a wrong name fails at the next turn.)", ch.Agent, oneLine(model, 60)), true
	}
	if slices.Contains(r.Models, model) {
		return "", true
	}
	return fmt.Sprintf("%s does not list model %s; nothing was changed. Its models: %s.", ch.Agent, oneLine(model, 60), strings.Join(r.Models, ", ")), false
}

// statusDetail is what /status adds to chatops' line: the effort and the
// agent's native session id.
func (s *session) statusDetail(ctx context.Context) string {
	ch, err := s.Bot.Chat(ctx, s.chat.ID)
	if err != nil {
		return ""
	}
	out := " · effort " + cmp.Or(ch.Effort, "(default)")
	if s.Sessions == nil {
		return out
	}
	session := "(none yet)"
	rec, err := s.Sessions.GetChat(ctx, string(ch.ID))
	switch {
	case err != nil:
		session = "(unreadable: " + err.Error() + ")"
	case rec.Sessions[ch.Agent] != "":
		session = rec.Sessions[ch.Agent]
	}
	return out + " · session " + session
}
