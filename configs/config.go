// Package configs is the schema of Threadline's one YAML config file and its
// loading: ${ENV} expansion, *_file secrets, strict keys (an unknown key names
// its path and the nearest valid one), validation, defaults, the secret values
// to redact, and the key-by-key diff a reload applies. The directory also
// holds the example config, the Slack app manifest and the systemd unit;
// docs/config.md is checked against these types.
package configs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/redact"
	"github.com/threadline-bot/threadline/agentcore/registry"
)

// Config is the whole configuration file.
type Config struct {
	Database DatabaseConfig         `yaml:"database"`
	HTTP     HTTPConfig             `yaml:"http"`
	Workdir  string                 `yaml:"workdir"`
	Access   AccessConfig           `yaml:"access"`
	Defaults DefaultsConfig         `yaml:"defaults"`
	Agents   map[string]AgentConfig `yaml:"agents"`
	Slack    *SlackConfig           `yaml:"slack"`
	Matrix   *MatrixConfig          `yaml:"matrix"`
	LXD      LXDConfig              `yaml:"lxd"`
	Host     HostConfig             `yaml:"host"`
	// Workspaces are the chats' own branches and clones.
	Workspaces WorkspacesConfig `yaml:"workspaces"`
	// Context is the thread context prompts carry.
	Context ContextConfig `yaml:"context"`
	// Files bounds the files runs send to and fetch from their threads.
	Files FilesConfig `yaml:"files"`
	// Limits bounds what one run may produce.
	Limits LimitsConfig `yaml:"limits"`
	// Storage is the free-space floor below which runs are refused.
	Storage StorageConfig `yaml:"storage"`

	// path is the file the config came from ("" for the built-in defaults).
	path string
	// envRefs are the environment variables the file references as ${VAR}.
	envRefs []string
	// red is the redactor of the secrets (Redactor).
	red *redact.Redactor
}

// redMu guards Config.red for a Config that did not come from Load.
var redMu sync.Mutex

// Redactor is the redactor of c's secrets, the same one every call: the
// logger, the prompt service and the front-ends share it, so that the
// project secrets a run adds are scrubbed from all of them.
func (c *Config) Redactor() *redact.Redactor {
	redMu.Lock()
	defer redMu.Unlock()
	if c.red == nil {
		c.red = redact.New(c.Secrets()...)
	}
	return c.red
}

// ShareRedactor makes r, with c's secrets added, c's redactor: a reloaded
// config keeps the running process's one redactor.
func (c *Config) ShareRedactor(r *redact.Redactor) {
	r.Add(c.Secrets()...)
	redMu.Lock()
	defer redMu.Unlock()
	c.red = r
}

// Path is the file the config came from, "" for the built-in defaults.
func (c *Config) Path() string { return c.path }

// HostConfig says how host agents (chats without a project) are isolated
// from the bot (see host.go and agentcore/execution).
type HostConfig struct {
	// User is the unprivileged user host agents run as; default threadline-agent.
	User string `yaml:"user"`
	// Isolation is auto (uid when possible), uid (required) or off.
	Isolation string `yaml:"isolation"`
}

// DatabaseConfig selects the store.
type DatabaseConfig struct {
	// URL is postgres://... or a SQLite path (sqlite:PATH, file:PATH or PATH).
	URL     string `yaml:"url"`
	URLFile string `yaml:"url_file"`
}

// HTTPConfig is the address of /healthz, /metrics and the Slack HTTP endpoints.
type HTTPConfig struct {
	Listen string `yaml:"listen"`
	// AdminListen serves /healthz and /metrics when Listen is public (Slack
	// HTTP mode) or not loopback; default 127.0.0.1:8781 (see Listeners).
	AdminListen string `yaml:"admin_listen"`
}

// AccessConfig lists who may run and approve everywhere.
type AccessConfig struct {
	// Admins are "slack:U0123ABC" or "matrix:@alice:example.org".
	Admins []string `yaml:"admins"`
}

// DefaultsConfig holds defaults for new chats.
type DefaultsConfig struct {
	Agent string `yaml:"agent"`
	// InteractionTimeout declines approvals nobody answered in time; empty waits.
	InteractionTimeout Duration `yaml:"interaction_timeout"`
	// IdleTimeout stops a run whose agent wrote nothing for this long;
	// unset is DefaultIdleTimeout, 0 disables.
	IdleTimeout *Duration `yaml:"idle_timeout"`
	// Skills are skill directories (each with a SKILL.md) applied to every run
	// in the way the agent takes skills.
	Skills []string `yaml:"skills"`
}

// AgentConfig overrides an agent's launch.
type AgentConfig struct {
	// Base is the built-in adapter a local profile inherits.
	Base  string            `yaml:"base"`
	Bin   string            `yaml:"bin"`
	Args  []string          `yaml:"args"`
	Env   map[string]string `yaml:"env"`
	Model string            `yaml:"model"`
	// PassEnv names host variables passed to this agent besides the ones
	// its descriptor lists (its credential variables) and the proxy ones.
	PassEnv []string `yaml:"pass_env"`
	// IdleTimeout overrides defaults.idle_timeout for this agent.
	IdleTimeout *Duration `yaml:"idle_timeout"`
	// Sandbox tunes this agent's sandbox (host.isolation: sandbox).
	Sandbox SandboxConfig `yaml:"sandbox"`
}

// SandboxConfig is agents.<id>.sandbox.
type SandboxConfig struct {
	// Connect are more TCP ports the sandboxed agent may connect to, beside
	// 443, 80 and the ports of the URLs in its environment.
	Connect []uint16 `yaml:"connect"`
}

// DefaultIdleTimeout is defaults.idle_timeout when the file does not set it.
const DefaultIdleTimeout = 30 * time.Minute

// IdleTimeout is agent id's idle timeout: its own, else the defaults', else
// DefaultIdleTimeout; 0 disables.
func (c *Config) IdleTimeout(id string) time.Duration {
	if d := c.Agents[id].IdleTimeout; d != nil {
		return d.Duration
	}
	if d := c.Defaults.IdleTimeout; d != nil {
		return d.Duration
	}
	return DefaultIdleTimeout
}

// ChannelConfig is the per-channel (Slack) or per-room (Matrix) setting.
type ChannelConfig struct {
	Agent               string   `yaml:"agent"`
	Model               string   `yaml:"model"`
	Project             string   `yaml:"project"`
	Workdir             string   `yaml:"workdir"`
	Allow               []string `yaml:"allow"`
	Approvers           []string `yaml:"approvers"`
	ReplyWithoutMention bool     `yaml:"reply_without_mention"`
	InteractionTimeout  Duration `yaml:"interaction_timeout"`
	// Skills are skill directories (with a SKILL.md) for the channel's prompts.
	Skills []string `yaml:"skills"`
	// Agents and Projects, when set, are the only agents and projects the
	// channel's chats may use; RequesterOnly lets only a run's requester (or
	// an admin) answer its requests.
	Agents        []string `yaml:"agents"`
	Projects      []string `yaml:"projects"`
	RequesterOnly bool     `yaml:"requester_only"`
	// Worktrees off keeps one shared directory for the chats of a workdir
	// that is a git repository (one run at a time edits it); on (the
	// default) gives each chat its own clone and branch.
	Worktrees string `yaml:"worktrees"`
	// ThreadContext off keeps the thread's messages from the agent (the
	// earlier ones a chat starts with, and those said meanwhile); on (the
	// default) gives them.
	ThreadContext string `yaml:"thread_context"`
}

// ContextConfig is the context section: what of a thread a prompt carries.
type ContextConfig struct {
	// MaxBytes bounds the thread's messages one prompt carries (the newest
	// are kept); default DefaultContextBytes.
	MaxBytes int `yaml:"max_bytes"`
}

// DefaultContextBytes is context.max_bytes when the file does not set it.
const DefaultContextBytes = 16384

// ContextBytes is context.max_bytes, else DefaultContextBytes.
func (c *Config) ContextBytes() int {
	if c.Context.MaxBytes > 0 {
		return c.Context.MaxBytes
	}
	return DefaultContextBytes
}

// StorageConfig is the storage section.
type StorageConfig struct {
	// MinFree is the free space, in bytes, below which new runs are
	// refused on the file systems of the SQLite database and of the chats'
	// working directories; 0 or unset: DefaultMinFree; -1: no floor.
	MinFree int64 `yaml:"min_free"`
}

// DefaultMinFree is storage.min_free when the file does not set it (256 MB).
const DefaultMinFree = 256 << 20

// MinFree is storage.min_free: the floor in bytes, 0 for none.
func (c *Config) MinFree() int64 {
	switch {
	case c.Storage.MinFree < 0:
		return 0
	case c.Storage.MinFree == 0:
		return DefaultMinFree
	}
	return c.Storage.MinFree
}

// LimitsConfig is the limits section.
type LimitsConfig struct {
	// RunOutputBytes bounds the text one run produces (answer, reasoning,
	// tool output): past it the run is stopped and ends failed, saying
	// why. 0 or unset: 20 MB.
	RunOutputBytes int64 `yaml:"run_output_bytes"`
}

// FilesConfig is the files section: the files a run's thread tools move
// between its workspace and its thread (send_file, fetch_thread_file, the
// images the agent makes).
type FilesConfig struct {
	// MaxBytes bounds one file; default DefaultFileBytes.
	MaxBytes int64 `yaml:"max_bytes"`
}

// DefaultFileBytes is files.max_bytes when the file does not set it (50 MB).
const DefaultFileBytes = 50 << 20

// FileBytes is files.max_bytes, else DefaultFileBytes.
func (c *Config) FileBytes() int64 {
	if c.Files.MaxBytes > 0 {
		return c.Files.MaxBytes
	}
	return DefaultFileBytes
}

// WorkspacesConfig is the workspaces section.
type WorkspacesConfig struct {
	// Keep is how long a chat may stay idle before its clone is removed
	// (with a notice in its thread); default 14d. 0 keeps them.
	Keep *Duration `yaml:"keep"`
	// BranchPrefix starts every chat's branch; default threadline/.
	BranchPrefix string `yaml:"branch_prefix"`
}

// DefaultKeep is workspaces.keep when the file does not set it.
const DefaultKeep = 14 * 24 * time.Hour

// KeepWorkspaces is workspaces.keep (0: keep them).
func (c *Config) KeepWorkspaces() time.Duration {
	if c.Workspaces.Keep == nil {
		return DefaultKeep
	}
	return c.Workspaces.Keep.Duration
}

// WorktreesOff reports whether a channel or room whose workdir is dir
// turned worktrees off.
func (c *Config) WorktreesOff(dir string) bool {
	var chans []ChannelConfig
	if c.Slack != nil {
		for _, ch := range c.Slack.Channels {
			chans = append(chans, ch)
		}
	}
	if c.Matrix != nil {
		for _, ch := range c.Matrix.Rooms {
			chans = append(chans, ch)
		}
	}
	for _, ch := range chans {
		if ch.Worktrees == "off" && ch.Workdir != "" && filepath.Clean(ch.Workdir) == filepath.Clean(dir) {
			return true
		}
	}
	return false
}

// SlackConfig configures the Slack front-end.
type SlackConfig struct {
	Mode              string `yaml:"mode"`
	AppToken          string `yaml:"app_token"`
	AppTokenFile      string `yaml:"app_token_file"`
	BotToken          string `yaml:"bot_token"`
	BotTokenFile      string `yaml:"bot_token_file"`
	SigningSecret     string `yaml:"signing_secret"`
	SigningSecretFile string `yaml:"signing_secret_file"`
	APIURL            string `yaml:"api_url"`
	// Streaming is "auto" (chat.startStream where the workspace allows it) or "off".
	Streaming string `yaml:"streaming"`
	// AllowMentions lets agent text mention people, channels and groups
	// (<!here>, <@U…>) and post labelled links; by default they are escaped.
	AllowMentions bool                     `yaml:"allow_mentions"`
	Channels      map[string]ChannelConfig `yaml:"channels"`
	// Workspace applies to every channel of the workspace.
	Workspace ChannelConfig `yaml:"workspace"`
	// Assistant is bot/slack.Config.Assistant (assistant threads'
	// suggested prompts); AppHome bot/slack.Config.AppHome (the Home tab).
	Assistant SlackAssistantConfig `yaml:"assistant"`
	AppHome   bool                 `yaml:"app_home"`
}

// SlackAssistantConfig is slack.assistant (bot/slack.AssistantConfig).
type SlackAssistantConfig struct {
	PromptsTitle string `yaml:"prompts_title"`
	Prompts      []struct {
		Title   string `yaml:"title"`
		Message string `yaml:"message"`
	} `yaml:"suggested_prompts"`
}

// MatrixConfig configures the Matrix front-end.
type MatrixConfig struct {
	Homeserver      string                   `yaml:"homeserver"`
	UserID          string                   `yaml:"user_id"`
	AccessToken     string                   `yaml:"access_token"`
	AccessTokenFile string                   `yaml:"access_token_file"`
	Password        string                   `yaml:"password"`
	PasswordFile    string                   `yaml:"password_file"`
	Encryption      bool                     `yaml:"encryption"`
	RecoveryKeyFile string                   `yaml:"recovery_key_file"` // cross-signing and key backup; default <state dir>/matrix-recovery-key with encryption
	MaxEventBytes   int                      `yaml:"max_event_bytes"`   // bot/matrix.Config.MaxEventBytes (0: 48 KiB)
	Rooms           map[string]ChannelConfig `yaml:"rooms"`
}

// LXDConfig configures project containers.
type LXDConfig struct {
	// Remote is an lxc remote name; empty uses the local unix socket.
	Remote string `yaml:"remote"`
	// Image is the default image of new project containers.
	Image string `yaml:"image"`
	// Profiles are applied to new project containers; default [default].
	Profiles []string `yaml:"profiles"`
	// Instructions is a host file pushed into every project container as the
	// agents' shared instructions (e.g. /root/.claude/CLAUDE.md).
	Instructions string `yaml:"instructions"`
	// CredentialSyncTimeout bounds copying an agent's refreshed credentials
	// back from the container after a run; default 30s.
	CredentialSyncTimeout Duration `yaml:"credential_sync_timeout"`
}

// Duration is a time.Duration written as "90s", "5m".
type Duration struct{ time.Duration }

// UnmarshalYAML reads a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Value == "" {
		return nil
	}
	v, err := time.ParseDuration(n.Value)
	if days, ok := strings.CutSuffix(n.Value, "d"); ok && err != nil {
		var d int
		if _, serr := fmt.Sscanf(days, "%d", &d); serr == nil && fmt.Sprint(d) == days {
			v, err = time.Duration(d)*24*time.Hour, nil
		}
	}
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration (use 90s, 5m, 1h, 14d)", n.Line, n.Value)
	}
	if v < 0 {
		return fmt.Errorf("line %d: a duration cannot be negative", n.Line)
	}
	d.Duration = v
	return nil
}

// Paths lists where a config file is looked for when --config is not given.
func Paths() []string {
	paths := []string{"threadline.yaml"}
	if dir, err := os.UserConfigDir(); err == nil {
		paths = append(paths, filepath.Join(dir, "threadline", "config.yaml"))
	}
	return paths
}

// Load reads the file at path, or the first default location that exists.
// No file at all gives the built-in defaults.
func Load(path string) (*Config, error) {
	if path == "" {
		for _, p := range Paths() {
			if _, err := os.Stat(p); err == nil {
				path = p
				break
			}
		}
	}
	cfg := &Config{}
	if path != "" {
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		if err := parse(raw, cfg); err != nil {
			return nil, fmt.Errorf("config %s: %w", path, err)
		}
		cfg.path = path
		cfg.envRefs = envRefsOf(raw)
	}
	if err := cfg.applyDefaults(); err != nil {
		return nil, err
	}
	return cfg, nil
}

func parse(raw []byte, cfg *Config) error {
	var root yaml.Node
	if err := yaml.Unmarshal(raw, &root); err != nil {
		return err
	}
	if err := expandEnv(&root); err != nil {
		return err
	}
	if len(root.Content) == 0 {
		return nil
	}
	if err := checkKeys(root.Content[0], reflect.TypeOf(cfg), nil); err != nil {
		return err
	}
	// Decode the expanded tree strictly: a misspelt key is an error, not a
	// silently ignored setting.
	expanded, err := yaml.Marshal(root.Content[0])
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(expanded))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if err := cfg.readSecretFiles(); err != nil {
		return err
	}
	return cfg.validate()
}

// readSecretFiles fills each secret from its *_file setting (one of the two may be set).
func (c *Config) readSecretFiles() error {
	type pair struct {
		name  string
		value *string
		file  string
	}
	pairs := []pair{{"database.url", &c.Database.URL, c.Database.URLFile}}
	if c.Slack != nil {
		pairs = append(pairs,
			pair{"slack.app_token", &c.Slack.AppToken, c.Slack.AppTokenFile},
			pair{"slack.bot_token", &c.Slack.BotToken, c.Slack.BotTokenFile},
			pair{"slack.signing_secret", &c.Slack.SigningSecret, c.Slack.SigningSecretFile})
	}
	if c.Matrix != nil {
		pairs = append(pairs,
			pair{"matrix.access_token", &c.Matrix.AccessToken, c.Matrix.AccessTokenFile},
			pair{"matrix.password", &c.Matrix.Password, c.Matrix.PasswordFile})
	}
	for _, p := range pairs {
		if p.file == "" {
			continue
		}
		if *p.value != "" {
			return fmt.Errorf("%s and %s_file are both set; keep one", p.name, p.name)
		}
		b, err := os.ReadFile(p.file)
		if err != nil {
			return fmt.Errorf("%s_file: %w", p.name, err)
		}
		*p.value = strings.TrimSpace(string(b))
		if *p.value == "" {
			return fmt.Errorf("%s_file: %s is empty", p.name, p.file)
		}
	}
	return nil
}

// Secrets lists the configured secret values, for redaction in logs and chat.
// They are the database URL (whole, when it is a URL) and its password, every
// Slack and Matrix token and password (from the file or inline), and every
// value of agents.<id>.env of redact.MinLen bytes or more, whatever its key
// (a value long enough is treated as a secret: an agent's env is where API
// keys go, and a key's name says little), except, under a key that does not
// look secret, a path on this host (a config directory is no secret, and
// masking it would mangle every tool line) and a plain lowercase word such as
// "enabled" or "bedrock" (masking it would mangle every sentence).
// Project secrets are added at run time.
func (c *Config) Secrets() []string {
	var out []string
	if u, err := url.Parse(c.Database.URL); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok {
			out = append(out, pw)
		}
	}
	if strings.Contains(c.Database.URL, "://") {
		out = append(out, c.Database.URL)
	}
	for _, a := range c.Agents {
		for k, v := range a.Env {
			if looksSecretName(k) || !isLocalPath(v) && !isPlainWord(v) {
				out = append(out, v) // the redactor drops values shorter than redact.MinLen
			}
		}
	}
	if c.Slack != nil {
		out = append(out, c.Slack.AppToken, c.Slack.BotToken, c.Slack.SigningSecret)
	}
	if c.Matrix != nil {
		out = append(out, c.Matrix.AccessToken, c.Matrix.Password)
	}
	return out
}

// BotPaths are the bot's own files that no agent may reach (the sandbox's
// forbidden paths): the config file and the files secrets are read from.
// The database's files are the store's to name.
func (c *Config) BotPaths() []string {
	var out []string
	add := func(p string) {
		if p == "" {
			return
		}
		if abs, err := filepath.Abs(p); err == nil {
			out = append(out, abs)
		}
	}
	add(c.path)
	add(c.Database.URLFile)
	if c.Slack != nil {
		add(c.Slack.AppTokenFile)
		add(c.Slack.BotTokenFile)
		add(c.Slack.SigningSecretFile)
	}
	if c.Matrix != nil {
		add(c.Matrix.AccessTokenFile)
		add(c.Matrix.PasswordFile)
		add(c.Matrix.RecoveryKeyFile)
	}
	return out
}

// isPlainWord reports whether v is a short lowercase word (letters and
// hyphens, at most 16 bytes): a setting, not a secret.
func isPlainWord(v string) bool {
	if len(v) > 16 {
		return false
	}
	for _, r := range v {
		if (r < 'a' || r > 'z') && r != '-' {
			return false
		}
	}
	return true
}

// isLocalPath reports whether v is an absolute path that exists here, or
// whose directory does.
func isLocalPath(v string) bool {
	if !filepath.IsAbs(v) {
		return false
	}
	if _, err := os.Stat(v); err == nil {
		return true
	}
	_, err := os.Stat(filepath.Dir(v))
	return err == nil && filepath.Dir(v) != "/"
}

// SecretEnvValues returns the values in the process environment of the named
// host variables (those passed on to agents) whose names look secret (KEY,
// TOKEN, SECRET, PASSWORD, PASS, PASSWD, PWD, AUTH, CREDENTIAL, PRIVATE,
// COOKIE, SESSION, SIGNATURE, CERT, DSN, or a URL holding a password), for
// the redactor.
func SecretEnvValues(names ...string) []string {
	var out []string
	for _, n := range names {
		v, ok := os.LookupEnv(n)
		if !ok || v == "" {
			continue
		}
		if looksSecretName(n) {
			out = append(out, v)
			continue
		}
		if u, err := url.Parse(v); err == nil && u.User != nil {
			if pw, ok := u.User.Password(); ok && pw != "" { // https_proxy=http://user:pw@host
				out = append(out, v, pw)
			}
		}
	}
	return out
}

// secretNameParts are the parts of a variable name that mark its value secret.
var secretNameParts = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASS", "PASSWD", "PWD", "AUTH", "CREDENTIAL",
	"PRIVATE", "COOKIE", "SESSION", "SIGNATURE", "CERT", "DSN"}

// looksSecretName reports whether a part of a variable name (between
// underscores) ends in a word that marks its value secret (API_KEY, GH_TOKEN,
// APIKEY, DB_PASSWORD).
func looksSecretName(name string) bool {
	n := strings.ToUpper(name)
	if n == "PWD" || n == "OLDPWD" {
		return false // the shell's working directories
	}
	for _, part := range strings.FieldsFunc(n, func(r rune) bool { return r == '_' || r == '-' || r == '.' }) {
		for _, s := range secretNameParts {
			if strings.HasSuffix(part, s) {
				return true
			}
		}
	}
	return false
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// expandEnv replaces ${VAR} in every scalar value. An unset variable is an error
// naming it and its line, so a missing secret is found at start, not at use.
func expandEnv(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && strings.Contains(n.Value, "${") {
		var missing []string
		n.Value = envRef.ReplaceAllStringFunc(n.Value, func(m string) string {
			name := envRef.FindStringSubmatch(m)[1]
			v, ok := lookupEnv(name)
			if !ok {
				missing = append(missing, name)
			}
			return v
		})
		if len(missing) > 0 {
			return fmt.Errorf("line %d: environment variable %s is not set", n.Line, strings.Join(missing, ", "))
		}
	}
	for _, c := range n.Content {
		if err := expandEnv(c); err != nil {
			return err
		}
	}
	return nil
}

func (c *Config) validate() error {
	if err := c.Host.validate(); err != nil {
		return err
	}
	for id, a := range c.Agents {
		if id == "" {
			return errors.New("agents: an agent id is empty")
		}
		if a.Base != "" && a.Base == id {
			return fmt.Errorf("agents.%s: base must name another agent", id)
		}
		if a.Model != "" {
			if err := agent.ValidArgValue(a.Model); err != nil {
				return fmt.Errorf("agents.%s.model: %w", id, err)
			}
		}
		if err := validPassEnv(a.PassEnv); err != nil {
			return fmt.Errorf("agents.%s.pass_env: %w", id, err)
		}
	}
	for _, p := range c.Defaults.Skills {
		if _, err := skillOf(p); err != nil {
			return fmt.Errorf("defaults.skills: %w", err)
		}
	}
	channels := map[string]ChannelConfig{}
	if c.Slack != nil {
		for id, ch := range c.Slack.Channels {
			channels["slack.channels."+id] = ch
		}
		channels["slack.workspace"] = c.Slack.Workspace
	}
	if c.Matrix != nil {
		for id, ch := range c.Matrix.Rooms {
			channels["matrix.rooms."+id] = ch
		}
	}
	for where, ch := range channels {
		switch ch.Worktrees {
		case "", "on", "off":
		default:
			return fmt.Errorf("%s.worktrees: %q must be on or off", where, ch.Worktrees)
		}
		switch ch.ThreadContext {
		case "", "on", "off":
		default:
			return fmt.Errorf("%s.thread_context: %q must be on or off", where, ch.ThreadContext)
		}
		for _, p := range ch.Skills {
			if _, err := skillOf(p); err != nil {
				return fmt.Errorf("%s.skills: %w", where, err)
			}
		}
		if err := ch.validateLimits(where); err != nil {
			return err
		}
		if ch.Model != "" {
			// A channel's default model reaches the agent's argv like a typed one.
			if err := agent.ValidArgValue(ch.Model); err != nil {
				return fmt.Errorf("%s.model: %w", where, err)
			}
		}
	}
	if c.Context.MaxBytes < 0 {
		return fmt.Errorf("context.max_bytes: %d must not be negative (0 or unset: %d)", c.Context.MaxBytes, DefaultContextBytes)
	}
	if c.Storage.MinFree < -1 {
		return fmt.Errorf("storage.min_free: %d is neither a size in bytes nor -1 (no floor)", c.Storage.MinFree)
	}
	if c.Limits.RunOutputBytes < 0 {
		return fmt.Errorf("limits.run_output_bytes: %d must not be negative (0 or unset: 20 MB)", c.Limits.RunOutputBytes)
	}
	if c.Files.MaxBytes < 0 {
		return fmt.Errorf("files.max_bytes: %d must not be negative (0 or unset: %d)", c.Files.MaxBytes, DefaultFileBytes)
	}
	if c.HTTP.Listen != "" {
		if _, _, err := net.SplitHostPort(c.HTTP.Listen); err != nil {
			return fmt.Errorf("http.listen: %q is not host:port (e.g. 127.0.0.1:8780)", c.HTTP.Listen)
		}
	}
	for _, a := range c.Access.Admins {
		if !strings.HasPrefix(a, "slack:") && !strings.HasPrefix(a, "matrix:@") {
			return fmt.Errorf("access.admins: %q must be slack:<user id> or matrix:@user:server", a)
		}
	}
	if s := c.Slack; s != nil {
		switch s.Mode {
		case "":
			s.Mode = "socket"
		case "socket", "http":
		default:
			return fmt.Errorf("slack.mode: %q must be socket or http", s.Mode)
		}
		if s.BotToken == "" {
			return errors.New("slack.bot_token is required (xoxb-...)")
		}
		if s.Mode == "socket" && s.AppToken == "" {
			return errors.New("slack.app_token is required in socket mode (xapp-..., with connections:write)")
		}
		if s.Mode == "http" && s.SigningSecret == "" {
			return errors.New("slack.signing_secret is required in http mode")
		}
		if s.APIURL != "" {
			if u, err := url.Parse(s.APIURL); err != nil || u.Scheme == "" || u.Host == "" {
				return fmt.Errorf("slack.api_url: %q is not a URL", s.APIURL)
			}
		}
	}
	if m := c.Matrix; m != nil {
		if u, err := url.Parse(m.Homeserver); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fmt.Errorf("matrix.homeserver: %q is not an http(s) URL", m.Homeserver)
		}
		if !strings.HasPrefix(m.UserID, "@") || !strings.Contains(m.UserID, ":") {
			return fmt.Errorf("matrix.user_id: %q must look like @threadline:example.org", m.UserID)
		}
		if m.AccessToken == "" && m.Password == "" {
			return errors.New("matrix: set access_token or password")
		}
	}
	return nil
}

func (c *Config) applyDefaults() error {
	if c.Database.URL == "" {
		dir, err := DataDir()
		if err != nil {
			return err
		}
		c.Database.URL = filepath.Join(dir, "threadline.db")
		if err := movedRootData(dir); err != nil {
			return err
		}
	}
	if c.HTTP.Listen == "" {
		c.HTTP.Listen = "127.0.0.1:8780"
	}
	if m := c.Matrix; m != nil && m.Encryption {
		if m.RecoveryKeyFile == "" {
			dir, err := StateDir()
			if err != nil {
				return err
			}
			m.RecoveryKeyFile = filepath.Join(dir, "matrix-recovery-key")
		}
		p, err := expandHome(m.RecoveryKeyFile)
		if err != nil {
			return err
		}
		m.RecoveryKeyFile = p
	}
	if c.Workdir != "" {
		w, err := expandHome(c.Workdir)
		if err != nil {
			return err
		}
		c.Workdir = w
	}
	return nil
}

// DataDir is $XDG_DATA_HOME/threadline; by default SystemDir for root,
// else ~/.local/share/threadline.
func DataDir() (string, error) {
	if base := os.Getenv("XDG_DATA_HOME"); base != "" {
		return filepath.Join(base, "threadline"), nil
	}
	if os.Geteuid() == 0 {
		return SystemDir, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the data directory: %w", err)
	}
	return filepath.Join(home, ".local", "share", "threadline"), nil
}

// movedRootData refuses to start a root bot on a new, empty SystemDir when
// its database is still where earlier versions kept it (root's home):
// moving it is the operator's step, so that no chat is lost unseen.
func movedRootData(dir string) error {
	if dir != SystemDir {
		return nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return nil
	}
	old := filepath.Join(home, ".local", "share", "threadline")
	if _, err := os.Stat(filepath.Join(old, "threadline.db")); err != nil {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, "threadline.db")); err == nil {
		return nil
	}
	return fmt.Errorf("the database is in %s, where earlier versions kept a root bot's data; as root Threadline now keeps it in %s, "+
		"outside root's home, which the agent user must never pass through. Move it once, with no threadline running:\n  mkdir -p %s && mv %s/* %s/ && rmdir %s\n"+
		"or set XDG_DATA_HOME=%s to keep it where it is", old, dir, dir, old, dir, old, filepath.Dir(old))
}

func expandHome(p string) (string, error) {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, strings.TrimPrefix(p, "~")), nil
}

// skillOf reads a skill directory (or its SKILL.md): the name is the directory's.
func skillOf(p string) (registry.Skill, error) {
	p, err := expandHome(p)
	if err != nil {
		return registry.Skill{}, err
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return registry.Skill{}, err
	}
	if filepath.Base(abs) == "SKILL.md" {
		abs = filepath.Dir(abs)
	}
	file := filepath.Join(abs, "SKILL.md")
	if _, err := os.Stat(file); err != nil {
		return registry.Skill{}, fmt.Errorf("%s has no SKILL.md", p)
	}
	return registry.Skill{Name: filepath.Base(abs), Path: file}, nil
}

// Skills are the default skills of every run.
func (c *Config) Skills() []registry.Skill { return SkillsOf(c.Defaults.Skills) }

// SkillsOf reads skill directories (validated at load).
func SkillsOf(paths []string) []registry.Skill {
	var out []registry.Skill
	for _, p := range paths {
		if s, err := skillOf(p); err == nil {
			out = append(out, s)
		}
	}
	return out
}

// validateLimits checks a channel's agents and projects lists: well-formed
// ids, and its default agent and project among them when both are set.
func (ch ChannelConfig) validateLimits(where string) error {
	for _, l := range []struct {
		name, def string
		ids       []string
	}{{"agents", ch.Agent, ch.Agents}, {"projects", ch.Project, ch.Projects}} {
		for _, id := range l.ids {
			if err := agent.ValidArgValue(id); err != nil {
				return fmt.Errorf("%s.%s: %w", where, l.name, err)
			}
		}
		if l.def != "" && len(l.ids) > 0 && !slices.Contains(l.ids, l.def) {
			return fmt.Errorf("%s: the default %s %q is not in its %s list", where, strings.TrimSuffix(l.name, "s"), l.def, l.name)
		}
	}
	return nil
}
