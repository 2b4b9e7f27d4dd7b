// Command threadline is the chat-ops bot: a terminal chat, one-shot runs and
// migrations (serve, for Slack and Matrix, arrives with those front-ends).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/agentcore/redact"
	"github.com/threadline-bot/threadline/agentcore/sandbox"
	"github.com/threadline-bot/threadline/configs"
)

// version is set with -ldflags "-X main.version=...".
var version = "dev"

const usage = `threadline: a chat-ops bot for coding-agent CLIs

Usage:
  threadline serve [--config F] [--http-only]
  threadline chat [--chat ID] [--agent ID] [--model M] [--cwd DIR] [--project P] [--config F]
  threadline run --agent ID [--model M] [--chat ID] [--cwd DIR] [--project P] [--interactions deny|accept]
                 [--config F] [--events jsonl] "prompt"
  threadline chats [-n N] [--json] [--config F]      (recent chats; reopen with chat --chat ID)
  threadline init [--platform none|slack|matrix] [--config F]   (a starter config, never overwritten)
  threadline migrate [--config F]
  threadline audit [--chat ID] [--since T] [--json] [--config F]
  threadline agents [--all] [--json] [--config F]
  threadline doctor [--config F]
  threadline project add NAME [--container C] [--repo SRC [--base B] [--setup CMD] [--forge F --forge-url URL]] | list | remove NAME
  threadline project secret set|list|unset PROJECT [KEY]   (values from stdin, never printed)
  threadline workspace list|diff|push|pr|merge|remove|gc [--chat ID] [--json]   (a chat's own branch)
  threadline workspaces [--json]
  threadline schedule add NAME --cron EXPR [--tz Z] --channel C [--project P] [--agent A] "prompt" | list | remove NAME | run NAME
  threadline completion bash|zsh|fish   (the shell completion script)
  threadline version

Config: --config F, else ./threadline.yaml, else $XDG_CONFIG_HOME/threadline/config.yaml.
Without a config the store is SQLite under $XDG_DATA_HOME/threadline/.
`

func main() {
	// The sandbox helper (hidden; procrun starts it for a sandboxed agent)
	// confines itself and becomes the agent before anything else runs.
	if len(os.Args) > 1 && os.Args[1] == "sandbox" {
		err := sandbox.Exec(os.Args[2:], os.Environ())
		fmt.Fprintln(os.Stderr, "threadline:", err)
		os.Exit(126)
	}
	// First of all, for every command (serve, chat, run, relay...): a bot
	// given capabilities as ambient ones (configs/threadline.service) keeps
	// them, and no program it starts inherits any.
	if err := procrun.DropInheritedCaps(); err != nil {
		fmt.Fprintln(os.Stderr, "threadline: refusing to run:", err)
		os.Exit(1)
	}
	// Nor does it act with privileges its file grants (set-uid, file
	// capabilities): whoever may execute it would have them.
	if err := procrun.CheckNotPrivilegedExec(); err != nil {
		fmt.Fprintln(os.Stderr, "threadline: refusing to run:", err)
		os.Exit(1)
	}
	code, err := mainImpl(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "threadline:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// exitError carries a specific exit status.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func mainImpl(args []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2, nil
	}
	ctx := context.Background()
	var err error
	switch args[0] {
	case "serve":
		err = cmdServe(ctx, args[1:], stdout, stderr)
	case "chat":
		err = cmdChat(ctx, args[1:], stdin, stdout, stderr)
	case "run":
		err = cmdRun(ctx, args[1:], stdin, stdout, stderr)
	case "migrate":
		err = cmdMigrate(ctx, args[1:], stdout, stderr)
	case "chats":
		err = cmdChats(ctx, args[1:], stdout, stderr)
	case "init":
		err = cmdInit(ctx, args[1:], stdout, stderr)
	case "audit":
		err = cmdAudit(ctx, args[1:], stdout, stderr)
	case "agents":
		err = cmdAgents(ctx, args[1:], stdout, stderr)
	case "doctor":
		err = cmdDoctor(ctx, args[1:], stdout, stderr)
	case "project":
		err = cmdProject(ctx, args[1:], stdin, stdout, stderr)
	case "workspace":
		err = cmdWorkspace(ctx, args[1:], stdout, stderr)
	case "schedule", "schedules":
		err = cmdSchedule(ctx, args[1:], stdout, stderr)
	case "workspaces":
		err = cmdWorkspace(ctx, append([]string{"list"}, args[1:]...), stdout, stderr)
	case "completion":
		err = cmdCompletion(ctx, args[1:], stdout, stderr)
	case "relay": // hidden: started by threadline itself
		err = cmdRelay(ctx, args[1:], stdin, stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, versionString())
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "unknown command %q\n\n%s", args[0], usage)
		return 2, nil
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code, ee.err
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0, nil
	}
	if err != nil {
		return 1, err
	}
	return 0, nil
}

func versionString() string {
	s := "threadline " + version
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev, dirty string
		for _, kv := range bi.Settings {
			switch kv.Key {
			case "vcs.revision":
				rev = kv.Value
			case "vcs.modified":
				if kv.Value == "true" {
					dirty = "+dirty"
				}
			}
		}
		if version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			s = "threadline " + bi.Main.Version
		}
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if rev != "" {
			s += " (" + rev + dirty + ")"
		}
		s += " " + bi.GoVersion
	}
	return s
}

// newLogger logs to w at the level from THREADLINE_LOG (debug, info, warn,
// error), with the config's secret values redacted.
func newLogger(w io.Writer, def slog.Level, cfg *configs.Config) *slog.Logger {
	level := def
	if v := os.Getenv("THREADLINE_LOG"); v != "" {
		_ = level.UnmarshalText([]byte(strings.ToUpper(v)))
	}
	h := slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})
	return slog.New(redact.Handler(h, cfg.Redactor()))
}
