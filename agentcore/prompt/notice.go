// What a run learns about its agent and tells or keeps: the model the agent
// reports (stored with the run), and a notice when the agent's CLI is outside
// the versions it was verified with (told once per agent and version in a
// chat).

package prompt

import (
	"context"
	"fmt"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/logkey"
)

// versionTimeout bounds the version check before a run.
const versionTimeout = 10 * time.Second

// VersionChecker says whether an agent's CLI is outside its verified
// versions (the registry's probe, through the capability cache).
type VersionChecker interface {
	// CheckVersion returns the CLI's version and, when it is outside the
	// versions the agent was verified with, why ("verified with 2.1.0;
	// found 2.3.0"); warning is "" for a verified or unknown version.
	CheckVersion(ctx context.Context, agentID string) (version, warning string)
}

// ModelRecorder is an optional interface of the Chats given to New: it
// stores the model the agent reported for a run (store.SetAgentModel).
type ModelRecorder interface {
	SetAgentModel(ctx context.Context, runID agent.RunID, model string) error
}

// VersionNoticer is an optional interface of the Chats given to New: it
// records that a chat was told about an agent@version and reports whether
// this was the first time (store.NoticeVersion). Without it the notice is
// told at every run.
type VersionNoticer interface {
	NoticeVersion(ctx context.Context, chatID agent.ChatID, what string) (bool, error)
}

// recordModel stores the model the agent reported, once per change.
func (s *Service) recordModel(ctx context.Context, run *Run, model string) {
	if model == run.model {
		return
	}
	run.model = model
	rec, ok := s.chats.(ModelRecorder)
	if !ok {
		return
	}
	if err := rec.SetAgentModel(ctx, run.ID, model); err != nil {
		s.log.WarnContext(ctx, "record the agent's model", logkey.ChatID, run.ChatID, logkey.RunID, run.ID, "err", err)
	}
}

// noticeVersion tells the chat, in one line, that the run's agent CLI is
// outside its verified versions, the first time this agent and version run
// in the chat.
func (s *Service) noticeVersion(ctx context.Context, run *Run) {
	if s.opts.Versions == nil {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, versionTimeout)
	version, warning := s.opts.Versions.CheckVersion(cctx, run.Agent)
	cancel()
	if warning == "" {
		return
	}
	if n, ok := s.chats.(VersionNoticer); ok {
		first, err := n.NoticeVersion(ctx, run.ChatID, run.Agent+"@"+version)
		if err != nil {
			s.log.WarnContext(ctx, "record a version notice", logkey.ChatID, run.ChatID, "err", err)
		}
		if !first {
			return
		}
	}
	s.log.InfoContext(ctx, "agent CLI outside its verified versions", logkey.ChatID, run.ChatID, logkey.RunID, run.ID, logkey.Agent, run.Agent, "version", version)
	s.appendEvent(ctx, run, agent.Event{Type: agent.EventSystem, Subtype: SubtypeVersionNotice,
		Text: fmt.Sprintf("Note: %s %s has not been verified with Threadline (%s); it may misbehave.", run.Agent, version, warning)})
}
