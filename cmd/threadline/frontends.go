// Front-ends of serve: the shared chatops front desk, and the Matrix and Slack
// bots built from the config.

package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"

	"github.com/threadline-bot/threadline/bot/matrix"
	"github.com/threadline-bot/threadline/chatops"
)

func init() {
	frontEndBuilders = append(frontEndBuilders, buildMatrix)
}

// desk returns the chatops front desk shared by every front-end of this process.
func (a *app) desk() *chatops.Threads {
	a.deskOnce.Do(func() {
		policy := &chatops.Policy{Admins: a.cfg.Access.Admins}
		for platform, channels := range map[string]map[string]ChannelConfig{"slack": a.slackChannels(), "matrix": a.matrixRooms()} {
			for id, c := range channels {
				policy.Set(chatops.Scope{Platform: platform, Channel: id}, chatops.Rules{
					Defaults:            chatops.Defaults{Agent: c.Agent, Model: c.Model, Project: c.Project, Workdir: c.Workdir},
					Allow:               c.Allow,
					Approvers:           c.Approvers,
					ReplyWithoutMention: c.ReplyWithoutMention,
				})
			}
		}
		workdir := a.cfg.Workdir
		if workdir == "" {
			if dir, err := dataDir(); err == nil {
				workdir = filepath.Join(dir, "work")
			}
		}
		agentID := a.cfg.Defaults.Agent
		if agentID == "" {
			agentID, _ = a.defaultAgent()
		}
		a.threads = chatops.NewThreads(a.bot, a.store, policy, chatops.ThreadsOptions{
			DefaultAgent: agentID, Workdir: workdir, Stream: true,
		}, a.log)
	})
	return a.threads
}

func (a *app) slackChannels() map[string]ChannelConfig {
	if a.cfg.Slack == nil {
		return nil
	}
	return a.cfg.Slack.Channels
}

func (a *app) matrixRooms() map[string]ChannelConfig {
	if a.cfg.Matrix == nil {
		return nil
	}
	return a.cfg.Matrix.Rooms
}

// matrixFront runs the Matrix bot.
type matrixFront struct{ bot *matrix.Bot }

func buildMatrix(_ context.Context, a *app) (frontEnd, error) {
	c := a.cfg.Matrix
	if c == nil {
		return nil, nil
	}
	bot, err := matrix.New(matrix.Config{
		Homeserver: c.Homeserver, UserID: c.UserID, AccessToken: c.AccessToken, Password: c.Password,
		Encryption: c.Encryption, CryptoDB: a.store.DB().DB, CryptoDialect: a.store.Dialect(),
	}, a.desk(), a.store, a.store, a.log.With("platform", "matrix"))
	if err != nil {
		return nil, fmt.Errorf("matrix: %w", err)
	}
	return &matrixFront{bot: bot}, nil
}

func (m *matrixFront) Name() string                      { return "matrix" }
func (m *matrixFront) Run(ctx context.Context) error     { return m.bot.Run(ctx) }
func (m *matrixFront) Handlers() map[string]http.Handler { return nil }

// Healthy asks the homeserver who the bot is.
func (m *matrixFront) Healthy(ctx context.Context) error {
	select {
	case <-m.bot.Ready():
	default:
		return errors.New("not connected yet")
	}
	if _, err := m.bot.Client().Whoami(ctx); err != nil {
		return fmt.Errorf("whoami: %w", err)
	}
	return nil
}

// deskState is embedded in app: the front desk, built once.
type deskState struct {
	deskOnce sync.Once
	threads  *chatops.Threads
}
