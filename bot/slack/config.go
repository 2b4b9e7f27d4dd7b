// config.go: the slack: section of the config file.

package slack

import (
	"errors"
	"fmt"
	"github.com/threadline-bot/threadline/agentcore/registry"
	"strings"
	"time"

	"github.com/threadline-bot/threadline/chatops"
)

// Transport modes.
const (
	ModeSocket = "socket"
	ModeHTTP   = "http"
)

// Platform is the platform name in places and qualified user ids ("slack:U1").
const Platform = "slack"

// Config is the slack: section of the config file.
type Config struct {
	// Mode is "socket" (default: Socket Mode, no public URL needed) or "http"
	// (Events API and interactivity posted to Handler).
	Mode string `yaml:"mode"`
	// AppToken (xapp-...) opens Socket Mode connections.
	AppToken string `yaml:"app_token"`
	// BotToken (xoxb-...) calls the Web API.
	BotToken string `yaml:"bot_token"`
	// SigningSecret verifies HTTP requests from Slack (mode http).
	SigningSecret string `yaml:"signing_secret"`
	// APIURL is the Web API base (default https://slack.com/api/).
	APIURL string `yaml:"api_url"`
	// Streaming is "auto" (default: chat.startStream where the workspace
	// allows it, chat.update elsewhere) or "off".
	Streaming string `yaml:"streaming"`
	// AllowMentions lets agent text mention people, channels and groups and
	// post disguised links (<!here>, <@U…>, <url|label>); by default they are
	// escaped and show as text. It applies to the whole process.
	AllowMentions bool `yaml:"allow_mentions"`
	// Assistant configures assistant threads (Slack's AI app split view):
	// the suggested prompts a new one offers.
	Assistant AssistantConfig `yaml:"assistant"`
	// AppHome publishes the App Home tab (views.publish): each person's
	// recent chats and running runs, with links, updated as runs start and
	// end. It needs the app_home_opened event and the Home tab in the app's
	// settings (the manifest has both).
	AppHome bool `yaml:"app_home"`
	// Channels are per-channel settings, by channel id.
	Channels map[string]ChannelConfig `yaml:"channels"`
	// Workspace applies to every channel of the workspace(s) the bot is in.
	Workspace ChannelConfig `yaml:"workspace"`
}

// ChannelConfig is one channel's settings.
type ChannelConfig struct {
	Agent   string `yaml:"agent"`
	Model   string `yaml:"model"`
	Project string `yaml:"project"`
	Workdir string `yaml:"workdir"`
	// Allow lists the Slack user ids who may start runs ("*": everyone).
	Allow []string `yaml:"allow"`
	// Approvers lists the Slack user ids who may answer the agent's requests.
	Approvers []string `yaml:"approvers"`
	// ReplyWithoutMention makes every reply in a bound thread a prompt.
	ReplyWithoutMention bool `yaml:"reply_without_mention"`
	// InteractionTimeout declines approvals nobody answered in time; zero waits.
	InteractionTimeout time.Duration `yaml:"-"`
	// Skills are applied to the channel's prompts.
	Skills []registry.Skill `yaml:"-"`
	// ThreadContext "off" keeps the thread's messages from the agent; "on"
	// or "" gives them (chatops.Rules.ThreadContext).
	ThreadContext string `yaml:"thread_context"`
}

// DefaultAPIURL is Slack's Web API.
const DefaultAPIURL = "https://slack.com/api/"

// ErrConfig is wrapped by configuration errors.
var ErrConfig = errors.New("slack config")

// Validate checks the config and fills defaults.
func (c *Config) Validate() error {
	if c.Mode == "" {
		c.Mode = ModeSocket
	}
	if c.APIURL == "" {
		c.APIURL = DefaultAPIURL
	}
	if !strings.HasSuffix(c.APIURL, "/") {
		c.APIURL += "/"
	}
	if c.Streaming == "" {
		c.Streaming = "auto"
	}
	var problems []string
	if !strings.HasPrefix(c.BotToken, "xoxb-") {
		problems = append(problems, "bot_token must be a bot token (xoxb-...)")
	}
	switch c.Mode {
	case ModeSocket:
		if !strings.HasPrefix(c.AppToken, "xapp-") {
			problems = append(problems, "app_token must be an app-level token (xapp-...) with connections:write for Socket Mode")
		}
	case ModeHTTP:
		if c.SigningSecret == "" {
			problems = append(problems, "signing_secret is required in http mode")
		}
	default:
		problems = append(problems, fmt.Sprintf("mode %q: want socket or http", c.Mode))
	}
	if c.Streaming != "auto" && c.Streaming != "off" {
		problems = append(problems, fmt.Sprintf("streaming %q: want auto or off", c.Streaming))
	}
	for id := range c.Channels {
		if id == "" {
			problems = append(problems, "channels: empty channel id")
		}
	}
	if len(c.Assistant.Prompts) > 4 {
		problems = append(problems, fmt.Sprintf("assistant.suggested_prompts: %d prompts, Slack shows at most 4", len(c.Assistant.Prompts)))
	}
	for i, sp := range c.Assistant.Prompts {
		if strings.TrimSpace(sp.Title) == "" || strings.TrimSpace(sp.Message) == "" {
			problems = append(problems, fmt.Sprintf("assistant.suggested_prompts[%d]: title and message are required", i))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrConfig, strings.Join(problems, "; "))
	}
	return nil
}

func (cc ChannelConfig) rules() chatops.Rules {
	return chatops.Rules{
		Defaults: chatops.Defaults{Agent: cc.Agent, Model: cc.Model, Project: cc.Project, Workdir: cc.Workdir,
			InteractionTimeout: cc.InteractionTimeout, Skills: cc.Skills},
		Allow:     cc.Allow,
		Approvers: cc.Approvers,
		// A workspace-wide setting applies unless the channel says otherwise.
		ReplyWithoutMention: cc.ReplyWithoutMention,
		ThreadContext:       cc.ThreadContext,
	}
}

// Apply adds the channel and workspace rules to the policy.
func (c Config) Apply(p *chatops.Policy) {
	p.Set(chatops.Scope{Platform: Platform}, c.Workspace.rules())
	for id, cc := range c.Channels {
		p.Set(chatops.Scope{Platform: Platform, Channel: id}, cc.rules())
	}
}
