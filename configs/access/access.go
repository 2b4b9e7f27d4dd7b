// Package access turns the access sections of a config into what the
// front-ends enforce: the admins and each Slack channel's and Matrix room's
// rules (allow and approvers lists, defaults, agents and projects limits,
// requester_only) as a chatops.Policy, and the slack section in bot/slack's
// terms. serve builds it at start and again on a reload.
package access

import (
	"cmp"

	slackbot "github.com/threadline-bot/threadline/bot/slack"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/configs"
)

// Policy builds the access policy of cfg's channels and rooms (serve's
// start and a reload). The defaults (defaultAgent, the interaction timeout)
// are each platform's least specific rules, under a workspace's own.
func Policy(cfg *configs.Config, defaultAgent string) *chatops.Policy {
	policy := &chatops.Policy{Admins: cfg.Access.Admins}
	under := func(s chatops.Scope) {
		r := policy.Rules[s]
		r.Agent = cmp.Or(r.Agent, defaultAgent)
		r.InteractionTimeout = cmp.Or(r.InteractionTimeout, cfg.Defaults.InteractionTimeout.Duration)
		policy.Set(s, r)
	}
	if cfg.Slack != nil {
		Slack(cfg.Slack).Apply(policy)
		limit(policy, chatops.Scope{Platform: "slack"}, cfg.Slack.Workspace)
		for id, c := range cfg.Slack.Channels {
			limit(policy, chatops.Scope{Platform: "slack", Channel: id}, c)
		}
		under(chatops.Scope{Platform: "slack"})
	}
	if cfg.Matrix != nil {
		under(chatops.Scope{Platform: "matrix"})
		for room, c := range cfg.Matrix.Rooms {
			policy.Set(chatops.Scope{Platform: "matrix", Channel: room}, chatops.Rules{
				Defaults: chatops.Defaults{Agent: c.Agent, Model: c.Model, Project: c.Project, Workdir: c.Workdir,
					InteractionTimeout: c.InteractionTimeout.Duration, Skills: configs.SkillsOf(c.Skills)},
				Allow:               c.Allow,
				Approvers:           c.Approvers,
				ReplyWithoutMention: c.ReplyWithoutMention,
				Agents:              c.Agents, Projects: c.Projects, RequesterOnly: c.RequesterOnly,
				ThreadContext: c.ThreadContext,
			})
		}
	}
	return policy
}

// limit adds a channel's agents and projects lists and requester_only to the
// rules bot/slack set for the scope.
func limit(p *chatops.Policy, s chatops.Scope, c configs.ChannelConfig) {
	r := p.Rules[s]
	r.Agents, r.Projects, r.RequesterOnly = c.Agents, c.Projects, c.RequesterOnly
	p.Set(s, r)
}

// Slack is a slack section in bot/slack's terms.
func Slack(c *configs.SlackConfig) slackbot.Config {
	channel := func(cc configs.ChannelConfig) slackbot.ChannelConfig {
		return slackbot.ChannelConfig{
			Agent: cc.Agent, Model: cc.Model, Project: cc.Project, Workdir: cc.Workdir,
			Allow: cc.Allow, Approvers: cc.Approvers, ReplyWithoutMention: cc.ReplyWithoutMention,
			InteractionTimeout: cc.InteractionTimeout.Duration, Skills: configs.SkillsOf(cc.Skills),
			ThreadContext: cc.ThreadContext,
		}
	}
	out := slackbot.Config{
		Mode: c.Mode, AppToken: c.AppToken, BotToken: c.BotToken, SigningSecret: c.SigningSecret,
		APIURL: c.APIURL, Streaming: c.Streaming, AllowMentions: c.AllowMentions, Workspace: channel(c.Workspace),
		Assistant: slackbot.AssistantConfig{PromptsTitle: c.Assistant.PromptsTitle}, AppHome: c.AppHome,
		Channels: map[string]slackbot.ChannelConfig{},
	}
	for id, cc := range c.Channels {
		out.Channels[id] = channel(cc)
	}
	for _, p := range c.Assistant.Prompts {
		out.Assistant.Prompts = append(out.Assistant.Prompts, slackbot.SuggestedPrompt{Title: p.Title, Message: p.Message})
	}
	return out
}
