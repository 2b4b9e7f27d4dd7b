// threadline project: projects, their LXD containers and secrets; the
// preparer's wiring.

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/execution"
	"github.com/threadline-bot/threadline/agentcore/redact"
	"github.com/threadline-bot/threadline/configs"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/projects"
)

const projectUsage = `Usage:
  threadline project add NAME [--container C [--image I] [--workspace HOST_DIR]]
                         [--repo SRC [--base BRANCH] [--setup CMD] [--forge gitea|github|gitlab --forge-url URL]]
                         [--channels C1,C2] [--allow U1,U2] [--config F]
  threadline project access NAME [--channels C1,C2] [--allow U1,U2] [--config F]
  threadline project list [--config F]
  threadline project remove NAME [--delete-container] [--config F]
  threadline project secret set PROJECT KEY [--config F]    (the value is read from stdin)
  threadline project secret list PROJECT [--config F]       (names only)
  threadline project secret unset PROJECT KEY [--config F]

A project with --repo owns a repository (a git URL or a host path), cloned
once: each chat of the project works in its own clone on its own branch
(threadline/<slug of its first prompt>-<8 hex of the chat id>), and the thread
commands diff, push, pr, merge and close ship it. --setup runs in each new
clone before its first turn; --forge and --forge-url say where pull requests
go (the token is the project secret FORGE_TOKEN; a push uses GIT_TOKEN, else
FORGE_TOKEN). Without --container its chats run on this host, isolated as
host chats are.

A project chat with --container runs its agent inside the project's LXD container, in /workspace.
The container is created from the image (else lxd.image) on the first run when
it does not exist; --workspace mounts a directory of the LXD host at /workspace.
Secrets reach only that container's agent runs, as environment variables.
--channels and --allow say which channels (or Matrix rooms) may bind a chat to
the project ('*' for every channel) and who may (user ids, e.g. U0123ABC or
@alice:example.org; unset: anyone the channel lets). A project without
--channels is closed: only admins may bind chats to it until 'project access'
names its channels. 'project access' replaces both lists (an omitted flag
empties its list); admins always may.
`

// cmdProject is `threadline project`: the flags; the work is store/projects'.
func cmdProject(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, projectUsage)
		return &exitError{2, errors.New("project: missing subcommand")}
	}
	sub := args[0]
	if sub == "secret" || sub == "secrets" {
		if len(args) < 2 {
			fmt.Fprint(stderr, projectUsage)
			return &exitError{2, errors.New("project secret: missing subcommand (set, list, unset)")}
		}
		sub, args = "secret "+args[1], args[1:]
	}
	fs := newFlagSet("project "+sub, stdout, stderr, projectUsage)
	config := fs.String("config", "", "config file")
	var run func(a projects.Admin, pos []string) error
	var want []string
	switch sub {
	case "add":
		container := fs.String("container", "", "LXD instance name of the project's container (its chats run there)")
		image := fs.String("image", "", "image the container is created from when missing (default: lxd.image)")
		workspace := fs.String("workspace", "", "directory of the LXD host mounted at /workspace")
		repo := fs.String("repo", "", "git URL or host path of the project's repository: each chat gets its own clone and branch")
		base := fs.String("base", "", "branch chats start from and merge into (default: the repository's default branch)")
		setup := fs.String("setup", "", "command run (with sh, as the agent) in each new clone before its first turn")
		forgeKind := fs.String("forge", "", "where pull requests go: gitea, github or gitlab")
		forgeURL := fs.String("forge-url", "", "the forge's base URL (GitHub Enterprise, GitLab or Gitea servers)")
		lists := accessFlags(fs)
		want = []string{"NAME"}
		run = func(a projects.Admin, pos []string) error {
			channels, allow, err := lists()
			if err != nil {
				return err
			}
			return a.Add(ctx, projects.Project{Name: pos[0], Container: *container, Image: *image, Workspace: *workspace, Channels: channels, Allow: allow,
				Repo: *repo, Base: *base, Setup: *setup, Forge: *forgeKind, ForgeURL: *forgeURL})
		}
	case "access":
		lists := accessFlags(fs)
		want = []string{"NAME"}
		run = func(a projects.Admin, pos []string) error {
			channels, allow, err := lists()
			if err != nil {
				return err
			}
			return a.Access(ctx, pos[0], channels, allow)
		}
	case "list", "ls":
		run = func(a projects.Admin, _ []string) error { return a.List(ctx) }
	case "remove", "rm":
		del := fs.Bool("delete-container", false, "also delete the container (and everything in it)")
		want = []string{"NAME"}
		run = func(a projects.Admin, pos []string) error { return a.Remove(ctx, pos[0], *del) }
	case "secret set":
		want = []string{"PROJECT", "KEY"}
		run = func(a projects.Admin, pos []string) error {
			// The value never comes from argv: that would leave it in shell
			// history and in the process list.
			v, err := projects.ReadSecret(stdin, stderr, pos[1])
			if err != nil {
				return err
			}
			return a.SetSecret(ctx, pos[0], pos[1], v)
		}
	case "secret unset":
		want = []string{"PROJECT", "KEY"}
		run = func(a projects.Admin, pos []string) error { return a.UnsetSecret(ctx, pos[0], pos[1]) }
	case "secret list", "secret ls":
		want = []string{"PROJECT"}
		run = func(a projects.Admin, pos []string) error { return a.ListSecrets(ctx, pos[0]) }
	case "help", "-h", "--help", "secret help", "secret -h", "secret --help":
		fmt.Fprint(stdout, projectUsage)
		return nil
	default:
		fmt.Fprint(stderr, projectUsage)
		return &exitError{2, fmt.Errorf("project: unknown subcommand %q", strings.TrimPrefix(sub, "secret "))}
	}
	pos, err := parseExactly(fs, args[1:], want...)
	if err != nil {
		return err
	}
	if sub == "add" {
		flag := func(name string) string { return fs.Lookup(name).Value.String() }
		if err := (projects.Project{Name: pos[0], Container: flag("container"), Image: flag("image"), Repo: flag("repo"), Base: flag("base"),
			Setup: flag("setup"), Forge: flag("forge"), ForgeURL: flag("forge-url")}).Check(); err != nil {
			return usageError(err)
		}
	}
	if len(want) == 2 {
		if err := projects.ValidSecretKey(pos[1]); err != nil {
			return usageError(err)
		}
	}
	cfg, st, err := openStore(ctx, *config, stderr)
	if err != nil {
		return err
	}
	defer st.Close()
	admin := projects.Admin{St: st, Remote: cfg.LXD.Remote, Image: cfg.LXD.Image, Out: stdout, Err: stderr,
		Clone: func(ctx context.Context, name, repo, base string) (string, error) {
			return cloneProject(ctx, cfg, st, name, repo, base)
		}}
	return usageError(run(admin, pos))
}

// usageError gives projects.ErrUsage errors exit status 2.
func usageError(err error) error {
	if errors.Is(err, projects.ErrUsage) {
		return &exitError{2, errors.New(strings.TrimPrefix(err.Error(), projects.ErrUsage.Error()+": "))}
	}
	return err
}

// accessFlags declares a project's --channels and --allow flags on fs (project
// add and project access); the returned func parses both once fs is parsed.
func accessFlags(fs *flag.FlagSet) func() (channels, allow []string, err error) {
	channelsFlag := fs.String("channels", "", "comma-separated channel or room ids whose chats may use the project, '*' for every channel (omitted: none, admins only)")
	allowFlag := fs.String("allow", "", "comma-separated user ids who may bind a chat to the project (omitted: anyone the channel lets)")
	return func() (channels, allow []string, err error) {
		if channels, err = projects.AccessList("channels", *channelsFlag); err != nil {
			return nil, nil, err
		}
		if allow, err = projects.AccessList("allow", *allowFlag); err != nil {
			return nil, nil, err
		}
		return channels, allow, nil
	}
}

// containerAgents adds to the built-ins what the preparer needs inside a
// container: where shared instructions go and which credential file is
// pushed in and synced back.
func containerAgents() map[agent.ProviderID]execution.Agent {
	out := map[agent.ProviderID]execution.Agent{}
	for _, b := range builtinTable() {
		d := b.desc
		out[agent.ProviderID(d.ID)] = execution.Agent{Bin: d.Executable, InstallHint: d.InstallHint}
	}
	if a, ok := out["claude"]; ok {
		a.Instructions = "/root/.claude/CLAUDE.md"
		if host := claudeCredentials(); host != "" {
			a.Credentials = []execution.Credential{{Host: host, Path: "/root/.claude/.credentials.json"}}
		}
		out["claude"] = a
	}
	return out
}

// claudeCredentials is the host's Claude Code credential file:
// $CLAUDE_CONFIG_DIR/.credentials.json, else ~/.claude/.credentials.json.
func claudeCredentials() string {
	if dir := os.Getenv("CLAUDE_CONFIG_DIR"); dir != "" {
		return filepath.Join(dir, ".credentials.json")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".claude", ".credentials.json")
}

// newPreparer wires the preparer of project containers from the lxd config.
func newPreparer(cfg *configs.Config, st *store.Store, log *slog.Logger, r *redact.Redactor) *execution.Preparer {
	profiles := cfg.LXD.Profiles
	if len(profiles) == 0 {
		profiles = []string{"default"}
	}
	return execution.New(log.With("component", "execution"), execution.Options{
		Projects:          projects.ForPreparer{St: st, Redact: r},
		Remote:            cfg.LXD.Remote,
		Image:             cfg.LXD.Image,
		Profiles:          profiles,
		Agents:            containerAgents(),
		Instructions:      cfg.LXD.Instructions,
		CredentialTimeout: cfg.LXD.CredentialSyncTimeout.Duration,
	})
}
