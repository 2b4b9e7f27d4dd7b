// Project chats: the optional preparer runs before the provider, and the run
// executes in the container it readied.

package prompt

import (
	"context"
	"fmt"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// Preparer readies the container of a project chat's run (execution.Preparer
// implements it).
type Preparer interface {
	// Prepare resolves req.Project and readies its container before the
	// provider runs, emitting its system events (container_starting,
	// container_preparing) through emit, the run's event path. It returns the
	// target the provider executes in, nil for a project run on the host.
	Prepare(ctx context.Context, provider agent.ProviderID, req agent.RunRequest, emit func(agent.Event)) (*agent.ContainerTarget, error)
	// Completed is called after a run in target completed (the credential
	// sync); it is best-effort and bounds its own work.
	Completed(ctx context.Context, provider agent.ProviderID, target *agent.ContainerTarget)
}

// inProject returns prov itself for a chat without a project (or without a
// Preparer), else prov wrapped so that every attempt of the run executes in
// the project's container.
func (s *Service) inProject(prov agent.Provider, chat Chat) agent.Provider {
	if chat.Project == "" || s.opts.Preparer == nil {
		return prov
	}
	return &projectProvider{Provider: prov, prep: s.opts.Preparer, project: chat.Project}
}

// projectProvider prepares the container once per run (a session-recovery
// retry reuses it), sets RunRequest.Container and, after a completed run,
// lets the preparer sync credentials back.
type projectProvider struct {
	agent.Provider
	prep    Preparer
	project string
	target  *agent.ContainerTarget
}

func (p *projectProvider) Run(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
	if p.target == nil {
		t, err := p.prep.Prepare(ctx, p.ID(), req, emit)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err() // a cancel is not an error; the service records it
			}
			emit(agent.Event{Type: agent.EventRunFailed, Text: fmt.Sprintf("Project %s: %v", p.project, err)})
			return fmt.Errorf("%w: project %s: %w", agent.ErrRunFailed, p.project, err)
		}
		p.target = t
	}
	req.Container = p.target
	completed := false
	err := p.Provider.Run(ctx, req, func(ev agent.Event) {
		if ev.Type == agent.EventRunCompleted {
			completed = true
		}
		emit(ev)
	})
	if err == nil && completed && ctx.Err() == nil && p.target != nil {
		p.prep.Completed(context.WithoutCancel(ctx), p.ID(), p.target)
	}
	return err
}
