// Definition: the declarative description of one agent CLI adapter.

package registry

import (
	"context"
	"regexp"
	"time"
)

// StreamFormat names the wire protocol an adapter's CLI speaks on stdout.
type StreamFormat string

// Stream formats. Each is parsed by one provider package.
const (
	FormatClaudeStreamJSON StreamFormat = "claude-stream-json"
	FormatCodexAppServer   StreamFormat = "codex-app-server"
	FormatACP              StreamFormat = "acp"
	FormatPiRPC            StreamFormat = "pi-rpc"
	FormatKimiStreamJSON   StreamFormat = "kimi-stream-json"
	FormatJSONEvents       StreamFormat = "json-events"
	FormatPlain            StreamFormat = "plain"
)

// Formats lists every known stream format.
var Formats = []StreamFormat{
	FormatClaudeStreamJSON, FormatCodexAppServer, FormatACP, FormatPiRPC,
	FormatKimiStreamJSON, FormatJSONEvents, FormatPlain,
}

// Dialects of FormatJSONEvents (Definition.Dialect).
const (
	DialectOpenCode    = "opencode"
	DialectCursorAgent = "cursor-agent"
	DialectMimo        = "mimo"
	DialectCopilot     = "copilot"
	DialectQoder       = "qoder"
	// DialectKilo is Kilo Code's `kilo run --format json`, OpenCode's events.
	DialectKilo = "kilo"
	// DialectGrokCLI is @vibe-kit/grok-cli's headless JSON lines: the
	// turn's OpenAI-style messages, printed after the turn.
	DialectGrokCLI = "grok-cli"
)

// PromptDelivery says how the prompt reaches the CLI.
type PromptDelivery string

// Prompt deliveries.
const (
	// DeliverStdin writes the prompt text to stdin, then closes it.
	DeliverStdin PromptDelivery = "stdin"
	// DeliverFile writes the prompt to a private temporary file whose path
	// goes on the command line (Args.PromptFile names the flag).
	DeliverFile PromptDelivery = "file"
	// DeliverArgv passes the prompt as one argument, within the platform's
	// command-line budget (see ArgvBudget).
	DeliverArgv PromptDelivery = "argv"
	// DeliverProtocol sends the prompt inside the CLI's own protocol
	// (stream-json user message, ACP session/prompt, pi RPC, app-server turn).
	DeliverProtocol PromptDelivery = "protocol"
)

// ResumeMechanism says how an adapter continues a native session.
type ResumeMechanism string

// Resume mechanisms.
const (
	// ResumeNone: every run starts fresh; the prompt service sends history.
	ResumeNone ResumeMechanism = "none"
	// ResumeCLIFlag: the CLI reports its session id on the stream and a flag
	// (Args.Resume) continues it on the next run.
	ResumeCLIFlag ResumeMechanism = "cli-flag"
	// ResumeProtocol: the protocol loads the session (ACP session/load,
	// app-server thread/resume, pi switch_session).
	ResumeProtocol ResumeMechanism = "protocol"
	// ResumeSnapshot: the CLI reports no id; the adapter discovers it from
	// the CLI's session directory before and after a fresh run (Antigravity).
	ResumeSnapshot ResumeMechanism = "dir-snapshot"
)

// ModelSource says where a model list came from.
type ModelSource string

// Model sources.
const (
	ModelsLive     ModelSource = "live"
	ModelsFallback ModelSource = "fallback"
	ModelsConfig   ModelSource = "config"
)

// SkillStrategy says how selected skills are applied to a prompt (see ApplySkills).
type SkillStrategy string

// Skill strategies.
const (
	SkillsNone         SkillStrategy = "none"
	SkillsSlash        SkillStrategy = "slash-command"
	SkillsDollar       SkillStrategy = "dollar-mention"
	SkillsInstructions SkillStrategy = "instructions"
)

// VersionProbe is how the CLI's version is read.
type VersionProbe struct {
	// Args default to ["--version"].
	Args []string
	// Pattern extracts the version from stdout+stderr: the first submatch if
	// it has one, else the whole match. Nil means DefaultVersionPattern.
	Pattern *regexp.Regexp
	// Timeout bounds the probe; zero means ProbeOptions.VersionTimeout.
	Timeout time.Duration
	// File, when set, is read instead of running the CLI: a path relative to
	// the resolved executable's real directory (e.g. "../package.json" for
	// an npm bin whose --version prints nothing), matched with Pattern.
	File string
}

// PackageJSONVersion is the probe of an npm bin whose --version prints
// nothing or another number: the "version" of the package.json one
// directory above the resolved executable (the package's bin/ or root).
var PackageJSONVersion = VersionProbe{File: "../package.json", Pattern: regexp.MustCompile(`"version"\s*:\s*"([^"]+)"`)}

// DefaultVersionPattern matches a dotted version such as 1.18.33 or v0.24.4-rc.1.
var DefaultVersionPattern = regexp.MustCompile(`v?(\d+\.\d+(?:\.\d+)?(?:[-+][0-9A-Za-z.-]+)?)`)

// ModelCommand lists models by running the CLI.
type ModelCommand struct {
	Args []string
	// Timeout zero means ProbeOptions.ModelTimeout.
	Timeout time.Duration
	// Parse turns stdout into model ids; an empty result counts as a failure
	// (the fallback list is used). Nil means ParseLines.
	Parse func(stdout string) []string
}

// ModelDiscoverer discovers models through a protocol handshake (ACP
// session/new, pi get_available_models). It is set by the wiring, which owns
// the providers; bin is the resolved executable and env the child environment.
type ModelDiscoverer func(ctx context.Context, bin string, env []string) ([]string, error)

// Models is how an adapter's models are found.
type Models struct {
	// Command is a live listing command (preferred over Discover when both are set).
	Command *ModelCommand
	// Discover is a protocol-level live listing.
	Discover ModelDiscoverer
	// Fallback is shown when live discovery fails or does not exist.
	Fallback []string
	// FreeForm says the CLI takes model ids beyond its list (full ids,
	// aliases, models of providers the operator configured): a chat may set
	// any model that passes agent.ValidArgValue. Without it a model must be
	// one of the listed ones. Operator-declared models (ConfigModels) always
	// close the list.
	FreeForm bool
}

// ArgSpec holds the inputs of the adapter's argument builder: the fixed
// arguments and the flags the provider fills per run. Providers own the exact
// command line; these values document it and let detection and budgeting see
// the same shape. An empty flag means the CLI has no such option.
type ArgSpec struct {
	// Base are the fixed arguments before any per-run flag.
	Base []string
	// Model, Effort, Resume and Fork are flag names ("--model", "-s", ...).
	Model  string
	Effort string
	Resume string
	Fork   string
	// Prompt is the flag before an argv prompt; empty means positional.
	Prompt string
	// PromptFile is the flag before a prompt file path (DeliverFile).
	PromptFile string
	// Accept are the arguments added only when the run's approval policy is
	// accept (print modes that cannot ask: --yolo, --force, --auto, ...).
	Accept []string
	// Extra are the operator's extra arguments (agents.<id>.args), appended last.
	Extra []string
}

// AuthCheck declares what detection may inspect to tell whether the CLI is
// signed in. Only names and paths are reported, never values or contents.
type AuthCheck struct {
	// Env are variables whose non-empty presence means an API key is configured
	// (in the host environment or the agent's configured env).
	Env []string
	// Files are credential files; "~/" is the home directory and "${VAR}"
	// expands from the environment (an entry with an unset variable is skipped).
	Files []string
	// Note explains what cannot be checked (keyring, OAuth in the OS store).
	Note string
	// Login is the command that signs the CLI in interactively ("claude
	// /login"), for the fix a missing sign-in is reported with; empty when
	// the CLI has none.
	Login string
}

// StateSpec says where the CLI keeps its state, so that a sandboxed run
// (host.isolation: sandbox) keeps it per chat: each chat's run gets a home
// of its own (HOME and the XDG base directories), the CLI's own state
// switches pointed into it, and copies of the shared files it needs (the
// login and the configuration set up once for the agent user). A tool of one
// chat then cannot read another chat's transcripts or sessions, and what it
// writes into its copy changes nothing for the others.
type StateSpec struct {
	// Env are the CLI's state directory switches, each relative to the
	// chat's home: {"CLAUDE_CONFIG_DIR": ".claude"}. A switch the agent's
	// configured env sets names the shared directory its files are copied
	// from; the run's switch always points into the chat's home.
	Env map[string]string
	// Shared are the files and directories copied from the shared home into
	// the chat's home before each run, besides Auth.Files: "~/" and
	// ${VAR} paths as Auth.Files (${VAR} read from the agent's configured
	// env and Env's shared values). A path outside the shared home and Env's
	// directories is not copied: the run may read it where it is.
	Shared []string
	// Connect are TCP ports the CLI reaches besides 443, 80 and the ports of
	// the URLs in its environment (agents.<id>.sandbox.connect adds more).
	Connect []uint16
}

// Capabilities are what the adapter supports beyond a plain turn.
type Capabilities struct {
	Interactions bool `json:"interactions"`
	Images       bool `json:"images"`
	Effort       bool `json:"effort"`
	Plan         bool `json:"plan"`
}

// Definition is one adapter: a built-in or a local profile of one. It is the
// one descriptor of a CLI: each provider package exports the definitions of
// the CLIs it runs (e.g. claude.Descriptor), the wiring in cmd/threadline
// lists them, detection probes them and the launch path resolves the same
// executable from them (Resolve).
type Definition struct {
	ID   string
	Name string
	// Base is the built-in a local profile inherits; empty for built-ins.
	Base string
	// Bin is the operator's override of the executable (agents.<id>.bin).
	// When set it is the only launch target tried.
	Bin string
	// Executable is looked up on PATH first, then each of Fallbacks.
	Executable string
	Fallbacks  []string
	Version    VersionProbe
	// VerifiedVersions are the CLI versions this adapter was verified with.
	// Empty means unverified: no version warning is given.
	VerifiedVersions []string
	// Verified states what verified the definition (a real CLI in CI, or
	// fixtures from docs and why); `threadline agents --json` shows it.
	Verified Verification
	Models   Models
	// ConfigModels, when set (by a profile), replace discovery (source "config").
	ConfigModels []string
	// Efforts are the effort levels the CLI takes (Caps.Effort). Empty with
	// Caps.Effort means free-form: any value that passes agent.ValidArgValue.
	Efforts []string
	Args    ArgSpec
	// Env is added to the child's environment (the operator's env wins).
	Env map[string]string
	// PassEnv are host variables this CLI reads besides Auth.Env (endpoint,
	// config directory) and the operator's agents.<id>.pass_env: with
	// Auth.Env they pass from the bot's environment to this agent only (see
	// HostEnvNames); bot secrets never do.
	PassEnv []string
	// Prompt is the preferred delivery; PromptFallback is used when an argv
	// prompt does not fit the budget (stdin or file; empty refuses).
	Prompt         PromptDelivery
	PromptFallback PromptDelivery
	Format         StreamFormat
	// Dialect refines FormatJSONEvents (DialectOpenCode, ...).
	Dialect    string
	Resume     ResumeMechanism
	NativeFork bool
	Caps       Capabilities
	Skills     SkillStrategy
	Auth       AuthCheck
	// State is what a sandboxed run of the CLI keeps per chat and shares.
	State StateSpec
	// InstallHint tells an operator how to install the CLI.
	InstallHint string
	Docs        string
}

// Candidates returns the launch targets in the order a run tries them: the
// operator's Bin alone when set, else Executable then Fallbacks.
func (d Definition) Candidates() []string {
	if d.Bin != "" {
		return []string{d.Bin}
	}
	out := make([]string, 0, 1+len(d.Fallbacks))
	if d.Executable != "" {
		out = append(out, d.Executable)
	}
	return append(out, d.Fallbacks...)
}

// HostEnvNames are the host variables that pass to this agent: its
// credential variables (Auth.Env), then PassEnv, each name once. The
// standard proxy and CA variables pass to every agent besides these.
func (d Definition) HostEnvNames() []string {
	out := make([]string, 0, len(d.Auth.Env)+len(d.PassEnv))
	seen := make(map[string]bool, cap(out))
	for _, k := range append(append([]string(nil), d.Auth.Env...), d.PassEnv...) {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// Clone returns a deep copy, so a derived definition (a profile, a CLI of the
// same family) never aliases its source.
func (d Definition) Clone() Definition { return d.clone() }

// clone returns a deep copy, so profiles never alias their base.
func (d Definition) clone() Definition {
	d.Fallbacks = append([]string(nil), d.Fallbacks...)
	d.VerifiedVersions = append([]string(nil), d.VerifiedVersions...)
	d.Version.Args = append([]string(nil), d.Version.Args...)
	d.Models.Fallback = append([]string(nil), d.Models.Fallback...)
	if d.Models.Command != nil {
		c := *d.Models.Command
		c.Args = append([]string(nil), c.Args...)
		d.Models.Command = &c
	}
	d.ConfigModels = append([]string(nil), d.ConfigModels...)
	d.Efforts = append([]string(nil), d.Efforts...)
	d.Args.Base = append([]string(nil), d.Args.Base...)
	d.Args.Extra = append([]string(nil), d.Args.Extra...)
	d.Args.Accept = append([]string(nil), d.Args.Accept...)
	d.Auth.Env = append([]string(nil), d.Auth.Env...)
	d.PassEnv = append([]string(nil), d.PassEnv...)
	d.Auth.Files = append([]string(nil), d.Auth.Files...)
	d.State.Shared = append([]string(nil), d.State.Shared...)
	d.State.Connect = append([]uint16(nil), d.State.Connect...)
	if d.State.Env != nil {
		env := make(map[string]string, len(d.State.Env))
		for k, v := range d.State.Env {
			env[k] = v
		}
		d.State.Env = env
	}
	if d.Env != nil {
		env := make(map[string]string, len(d.Env))
		for k, v := range d.Env {
			env[k] = v
		}
		d.Env = env
	}
	return d
}
