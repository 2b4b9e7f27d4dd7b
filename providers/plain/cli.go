// The unstructured CLIs: command lines, prompt delivery, sign-in hints.

package plain

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/agentcore/registry"
)

// CLI names one supported unstructured CLI.
type CLI string

// CLIs.
const (
	Antigravity CLI = "antigravity"
	Aider       CLI = "aider"
	Grok        CLI = "grok"
	Qwen        CLI = "qwen"
	DeepSeek    CLI = "deepseek"
	AtomCode    CLI = "atomcode"
	Continue    CLI = "continue"
	Crush       CLI = "crush"
)

// CLIs lists every supported CLI.
var CLIs = []CLI{Antigravity, Aider, Grok, Qwen, DeepSeek, AtomCode, Continue, Crush}

// Errors.
var (
	// ErrUnknownCLI is returned by New and Command for an unsupported CLI.
	ErrUnknownCLI = errors.New("plain: unknown CLI")
	// ErrPromptTooLarge is returned (after run.failed) when a CLI that only
	// takes the prompt as an argument gets one longer than the argv limit:
	// procrun.ErrPromptTooLarge.
	ErrPromptTooLarge = procrun.ErrPromptTooLarge
)

// cliInfo is the per-CLI table.
type cliInfo struct {
	name    string // display name
	bin     string
	install string
	// prompt is how the prompt reaches the CLI; longPrompt is the delivery
	// used when it does not fit argv (DeliverArgv: none, refuse).
	prompt, longPrompt registry.PromptDelivery
	signIn             *regexp.Regexp
	signInHelp         string
	args               registry.ArgSpec // the flags Command passes
	// descriptor builds the CLI's descriptor (Descriptor); nil for Qwen.
	descriptor func() registry.Definition
}

// described is the table entry of the CLI of descriptor desc, named name,
// whose missing sign-in stderr matches signIn: its executable, install
// hint, flags and prompt delivery are the descriptor's, so that what
// detection shows is what runs.
func described(desc func() registry.Definition, name string, signIn *regexp.Regexp, signInHelp string) cliInfo {
	d := desc()
	long := d.PromptFallback
	if long == "" {
		long = d.Prompt
	}
	return cliInfo{name: name, bin: d.Executable, install: d.InstallHint, args: d.Args,
		prompt: d.Prompt, longPrompt: long, signIn: signIn, signInHelp: signInHelp, descriptor: desc}
}

var signInGeneric = regexp.MustCompile(`(?i)not logged in|not authenticated|please (log|sign) ?in|authentication required|invalid api[ _-]?key|missing api[ _-]?key|no api[ _-]?key|api key (is )?(not set|missing|required)|\b401\b.*unauthori[sz]ed|unauthori[sz]ed.*\b401\b`)

var clis = map[CLI]cliInfo{
	Antigravity: described(antigravityDescriptor, "Antigravity",
		regexp.MustCompile(`(?is)authentication required.*please visit|authentication timed out|not logged into antigravity|accounts\.google\.com/o/oauth2/auth|unauthenticated|invalid_grant|token has expired`),
		"Antigravity needs to sign in, and print mode cannot finish a Google sign-in. "+
			"Run `agy` once in a terminal on this host (as the bot's user): it opens the sign-in and stores the token in the system keyring. Then retry."),
	Aider: described(aiderDescriptor, "Aider", signInGeneric,
		"Aider has no API key for the model: set the provider's key (e.g. ANTHROPIC_API_KEY, OPENAI_API_KEY) in agents.aider.env, then retry."),
	Grok: described(grokDescriptor, "Grok Build", signInGeneric,
		"Grok Build is not signed in: run `grok login --oauth` once in a terminal on this host (or set XAI_API_KEY in agents.grok.env), then retry."),
	// Qwen has no descriptor here (the registry runs Qwen Code over ACP).
	Qwen: {
		name: "Qwen Code", bin: "qwen", install: "npm install -g @qwen-code/qwen-code",
		args:   registry.ArgSpec{Model: "--model", Accept: []string{"--yolo"}},
		prompt: registry.DeliverStdin, longPrompt: registry.DeliverStdin, signIn: signInGeneric,
		signInHelp: "Qwen Code is not signed in: run `qwen` once in a terminal on this host to log in (or set OPENAI_API_KEY/OPENAI_BASE_URL in agents.qwen.env), then retry.",
	},
	DeepSeek: described(deepseekDescriptor, "DeepSeek TUI",
		regexp.MustCompile(`(?i)MISSING_CREDENTIAL|KEY=<your-key>|api_key\s*=\s*["']<your-key>["']|DEEPSEEK_API_KEY.*(missing|not set|required|unauthori)`),
		"DeepSeek TUI has no API key: set api_key in ~/.deepseek/config.toml or DEEPSEEK_API_KEY in agents.deepseek.env, then retry."),
	AtomCode: described(atomcodeDescriptor, "AtomCode", signInGeneric,
		"AtomCode is not signed in: run `atomcode login` once in a terminal on this host (or configure an API key in ~/.atomcode/config.toml), then retry."),
	Continue: described(continueDescriptor, "Continue CLI", signInGeneric,
		"Continue CLI has no usable model: list one with its apiKey (and apiBase) in ~/.continue/config.yaml "+
			"(or $CONTINUE_GLOBAL_DIR/config.yaml), or run `cn login` once in a terminal on this host, then retry."),
	Crush: described(crushDescriptor, "Crush",
		regexp.MustCompile(`(?i)no providers configured|`+signInGeneric.String()),
		"Crush has no provider configured: run `crush` once in a terminal on this host to set one up "+
			"(or set the provider's key, e.g. ANTHROPIC_API_KEY or OPENAI_API_KEY, in agents.crush.env), then retry."),
}

// Invocation is one run's command line and prompt delivery.
type Invocation struct {
	Args []string
	// Stdin is written to the child's stdin (then closed); nil means /dev/null.
	Stdin []byte
	// PromptFile, when set, must hold the prompt: PromptFileArg is the
	// placeholder in Args that Run replaces with the file's path.
	PromptFile bool
}

// PromptFileArg stands for the prompt file's path in Invocation.Args.
const PromptFileArg = "\x00prompt-file\x00"

// Command builds the invocation of cli for req. argvLimit is the longest
// prompt passed as one argument; a longer one (or one holding a NUL byte)
// goes through the CLI's long-prompt route, and a CLI without one returns
// ErrPromptTooLarge. An argv prompt starting with '-' gets a leading space so
// it is not read as an option. resumeFlag is the resume option (Antigravity only).
// Approval flags are passed only for ApprovalAccept (print modes cannot ask):
//
//	antigravity  agy --print [--add-dir CWD] [--model=M] [--resume ID] PROMPT
//	aider        aider --no-pretty --no-git --no-auto-commits --no-suggest-shell-commands
//	             --no-show-model-warnings [--yes-always] [--model=M] (--message PROMPT | --message-file F)
//	grok         grok -p PROMPT [--model=M] [--effort=E]
//	qwen         qwen [--yolo] [--model=M]          (prompt on stdin)
//	deepseek     deepseek exec [--auto] [--model=M] PROMPT
//	atomcode     atomcode --prompt-file F [-y] [--model=M]
//	continue     cn -p [--auto]                     (prompt on stdin; the model is the config's)
//	crush        crush run --quiet [--model=M]      (prompt on stdin; it approves every tool)
//
// Model and effort are one argument bound to their flag (GNU-style parsers:
// argparse, click, clap, yargs, commander take --opt=value); a value
// agent.CheckRunArgs refuses is an error wrapping agent.ErrInvalidArgValue.
func Command(cli CLI, req agent.RunRequest, argvLimit int, resumeFlag string) (Invocation, error) {
	info, ok := clis[cli]
	if !ok {
		return Invocation{}, fmt.Errorf("%w: %q", ErrUnknownCLI, cli)
	}
	if err := agent.CheckRunArgs(req); err != nil {
		return Invocation{}, fmt.Errorf("%s: %w", info.name, err)
	}
	d := info.prompt
	if d == registry.DeliverArgv && !procrun.FitsArgv(req.Prompt, argvLimit) {
		d = info.longPrompt
		if d == registry.DeliverArgv {
			return Invocation{}, procrun.PromptTooLarge(info.name, req.Prompt, argvLimit)
		}
	}
	if d == registry.DeliverArgv && strings.HasPrefix(req.Prompt, "-") {
		// An argument starting with '-' would be read as an option.
		req.Prompt = " " + req.Prompt
	}
	var inv Invocation
	spec := info.args
	args := append([]string{}, spec.Base...)
	add := func(a ...string) { args = append(args, a...) }
	bound := func(flag, v string) { // --opt=value; nothing when the CLI has no such flag
		if flag != "" && v != "" {
			add(flag + "=" + v)
		}
	}
	// The accept flags, the model and the operator's arguments: the tail most
	// command lines share.
	acceptModelArgs := func() {
		if req.Approval == agent.ApprovalAccept {
			add(spec.Accept...)
		}
		bound(spec.Model, req.Model)
		add(req.Args...)
	}
	switch cli {
	case Antigravity:
		if req.Cwd != "" {
			add("--add-dir", req.Cwd)
		}
		bound(spec.Model, req.Model)
		if id := procrun.KnownSession(req); id != "" {
			add(resumeFlag, id)
		}
		add(req.Args...)
		add(req.Prompt)
	case Aider:
		acceptModelArgs()
		if d == registry.DeliverFile {
			add(spec.PromptFile, PromptFileArg)
		} else {
			add(spec.Prompt, req.Prompt)
		}
	case Grok:
		add(spec.Prompt, req.Prompt)
		bound(spec.Model, req.Model)
		bound(spec.Effort, req.Effort)
		add(req.Args...)
	case DeepSeek:
		acceptModelArgs()
		add(req.Prompt)
	case AtomCode:
		add(spec.PromptFile, PromptFileArg)
		acceptModelArgs()
	case Qwen, Crush, Continue:
		// Continue's cn has no model flag here (its --model adds a Continue
		// Hub model; the model is the config's); Crush approves every tool.
		acceptModelArgs()
	}
	inv.Args = args
	switch d {
	case registry.DeliverStdin:
		inv.Stdin = []byte(req.Prompt)
	case registry.DeliverFile:
		inv.PromptFile = true
	}
	return inv, nil
}
