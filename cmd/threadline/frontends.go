// Front-ends of serve: the shared chatops front desk, and the Matrix and Slack
// bots built from the config.

package main

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/health"
	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/bot/matrix"
	slackbot "github.com/threadline-bot/threadline/bot/slack"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/chatstore"
	"github.com/threadline-bot/threadline/configs/access"
	"github.com/threadline-bot/threadline/configs/doctor"
)

func init() {
	frontEndBuilders = append(frontEndBuilders, buildSlack, buildMatrix)
}

// desk returns the chatops front desk shared by every front-end of this process.
func (a *app) desk() *chatops.Desk {
	a.deskOnce.Do(func() {
		agentID, _ := a.defaultAgent() // "" when none can run: chats say so
		a.threads = chatops.NewDesk(a.bot, chatstore.Store{St: a.store}, a.policy(), chatops.DeskOptions{
			DefaultAgent: agentID, Workdir: a.cfg.WorkRoot(), Stream: true, Redact: a.redactor, ContextBytes: a.cfg.ContextBytes(),
			Projects: chatstore.Store{St: a.store}, Limiter: a.sharedBudget(),
			RunRequester: func(ctx context.Context, runID agent.RunID) (string, error) {
				r, err := a.store.GetRun(ctx, string(runID))
				return r.StartedBy, err
			},
		}, a.log)
		a.metrics.SetQueue(a.threads.QueueDepth)
	})
	return a.threads
}

var _ chatops.AgentLookup = (*app)(nil)

// Agent answers chatops.AgentLookup: the values a chat may set for one
// agent, from its definition; only an agent whose closed model list comes
// from its CLI (e.g. cursor-agent models) is probed, and only that one.
func (a *app) Agent(ctx context.Context, id string) (chatops.AgentInfo, bool) {
	s := a.agentTable()
	d, ok := s.ByID[id]
	if !ok {
		return chatops.AgentInfo{}, false
	}
	live := d.Models.Command != nil || d.Models.Discover != nil
	if len(d.ConfigModels) > 0 || d.Models.FreeForm || !live {
		return chatops.AgentInfo{ID: id, Args: registry.StaticArgRules(d)}, true
	}
	r, _ := s.ProbeOne(ctx, id, a.log)
	return chatops.AgentInfos([]registry.Report{r})[0], true
}

// AgentIDs lists the known agent ids (chatops.AgentLookup).
func (a *app) AgentIDs() []string { return a.agentTable().IDs() }

// policy builds the access policy of the config's channels and rooms.
func (a *app) policy() *chatops.Policy { return access.Policy(a.cfg, a.cfg.Defaults.Agent) }

// slackFront runs the Slack bot, once Slack answers auth.test: an
// unreachable Slack at start is retried with backoff (health: connecting), a
// rejected token ends serve.
type slackFront struct {
	bot   *slackbot.Bot
	mode  string
	probe *slack.Client
	conn  *health.Connector
}

// slackRetry is the backoff of Slack's first connection.
var slackRetry = struct{ first, max time.Duration }{time.Second, 30 * time.Second}

func buildSlack(_ context.Context, a *app) (frontEnd, error) {
	if a.cfg.Slack == nil {
		return nil, nil
	}
	cfg := access.Slack(a.cfg.Slack)
	client := &http.Client{Transport: platformTransport(a.metrics, "slack", nil), Timeout: 60 * time.Second}
	bot, err := slackbot.New(cfg, a.desk(), a.log, slack.OptionHTTPClient(client))
	if err != nil {
		return nil, err
	}
	probe := slack.New(cfg.BotToken, slack.OptionAPIURL(cmp.Or(cfg.APIURL, slackbot.DefaultAPIURL)), slack.OptionHTTPClient(client))
	conn := &health.Connector{Name: "slack", First: slackRetry.first, Max: slackRetry.max, Log: a.log}
	return &slackFront{bot: bot, mode: a.cfg.Slack.Mode, probe: probe, conn: conn}, nil
}

func (s *slackFront) Name() string { return "slack" }

// Run connects, then serves until ctx ends.
func (s *slackFront) Run(ctx context.Context) error {
	err := s.conn.Run(ctx, func(ctx context.Context) error {
		_, err := s.probe.AuthTestContext(ctx)
		return err
	}, func(err error) bool { rejected, _ := doctor.SlackRejected(err); return rejected })
	if err != nil {
		_, why := doctor.SlackRejected(err)
		return fmt.Errorf("auth.test rejected the token (%s): check slack.bot_token", why)
	}
	if ctx.Err() != nil {
		return nil
	}
	return s.bot.Run(ctx)
}

// Healthy is "connecting" while Slack is retried, else the bot's health.
func (s *slackFront) Healthy(ctx context.Context) error {
	if err := s.conn.Err(); err != nil {
		return err
	}
	return s.bot.Healthy(ctx)
}

func (s *slackFront) Handlers() map[string]http.Handler {
	if s.mode != "http" {
		return nil
	}
	return map[string]http.Handler{"/slack/": s.bot.Handler()}
}

// matrixFront runs the Matrix bot (Run, Healthy: bot/matrix).
type matrixFront struct{ *matrix.Bot }

func buildMatrix(_ context.Context, a *app) (frontEnd, error) {
	c := a.cfg.Matrix
	if c == nil {
		return nil, nil
	}
	bot, err := matrix.New(matrix.Config{
		Homeserver: c.Homeserver, UserID: c.UserID, AccessToken: c.AccessToken, Password: c.Password,
		Encryption: c.Encryption, CryptoDB: a.store.DB().DB, CryptoDialect: a.store.Dialect(), MaxEventBytes: c.MaxEventBytes,
		RecoveryKeyFile: c.RecoveryKeyFile,
		HTTPClient:      &http.Client{Transport: platformTransport(a.metrics, "matrix", nil)},
	}, a.desk(), a.store, a.store, a.log.With("platform", "matrix"))
	if err != nil {
		return nil, fmt.Errorf("matrix: %w", err)
	}
	return matrixFront{bot}, nil
}

func (matrixFront) Name() string                      { return "matrix" }
func (matrixFront) Handlers() map[string]http.Handler { return nil }

// deskState is embedded in app: the front desk, built once.
type deskState struct {
	deskOnce sync.Once
	threads  *chatops.Desk
}
