// Workspaces: every chat's own clone and branch (agentcore/worktrees), its
// wiring, its words in chat (chatops.Workspaces) and `threadline workspace`.

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/execution"
	"github.com/threadline-bot/threadline/agentcore/forge"
	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/agentcore/workspace"
	"github.com/threadline-bot/threadline/agentcore/worktrees"
	"github.com/threadline-bot/threadline/bot/console"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/configs"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/wsstore"
)

// Bot identity of the commits the bot makes (Push, the rebase of Merge).
const (
	botName  = "Threadline"
	botEmail = "threadline@localhost"
)

// newWorkspaces is the chats' workspaces of the app: clones under
// <data>/workspaces, their git side run as the agent (iso, sb).
func newWorkspaces(cfg *configs.Config, st *store.Store, log *slog.Logger, owner string, iso *procrun.Isolation, sb *execution.Sandboxing) (*worktrees.Manager, error) {
	data, err := configs.DataDir()
	if err != nil {
		return nil, err
	}
	agents := execution.Workspaces{Iso: iso, Sandbox: sb}
	git := workspace.New(workspace.Options{Name: botName, Email: botEmail, RequireAgent: iso != nil || sb != nil,
		MakeDir: agents.MakeDir, RemoveDir: agents.RemoveDir, Logger: log})
	ws := wsstore.Store{St: st}
	return worktrees.New(worktrees.Options{
		Root: filepath.Join(data, "workspaces"), BranchPrefix: cfg.Workspaces.BranchPrefix, Owner: owner,
		NoWorktrees: cfg.WorktreesOff, Git: git, Store: ws, Projects: ws, Chats: ws, Agents: agents,
		Secrets: cfg.Secrets(), Log: log,
	}), nil
}

// chatWorkspaces is the workspaces as chatops.Workspaces: the ship actions
// worded for a thread.
type chatWorkspaces struct{ m *worktrees.Manager }

var _ chatops.Workspaces = chatWorkspaces{}

func person(r chatops.Requester) worktrees.Person {
	return worktrees.Person{ID: r.User.Qualified(), Name: r.Name, Email: r.Email}
}

// words turns the workspaces' errors into what a thread is told.
func words(err error) error {
	var conflict *workspace.ConflictError
	var refused *worktrees.Refused
	var unpushed *workspace.UnpushedError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, worktrees.ErrNoWorkspace):
		return chatops.ErrNoWorkspace
	case errors.As(err, &conflict):
		return &chatops.MergeConflict{Branch: conflict.Branch, Base: conflict.Base, Files: conflict.Files}
	case errors.As(err, &refused):
		return fmt.Errorf("nothing was pushed: the push checks refused %s:\n%s", refused.Branch, findingLines(refused))
	case errors.Is(err, workspace.ErrNotFastForward):
		return errors.New("the remote has commits this branch lacks, so nothing was pushed: ask the agent to rebase onto the base (or say merge), then push again")
	case errors.As(err, &unpushed):
		return fmt.Errorf("%s. Say `close --discard` to remove it anyway", unpushed.Error())
	case errors.Is(err, workspace.ErrAuth):
		return errors.New("the remote refused the project's credential: set the project secret GIT_TOKEN (threadline project secret set PROJECT GIT_TOKEN)")
	case errors.Is(err, worktrees.ErrNoForge):
		return err
	case errors.Is(err, forge.ErrUnauthorized), errors.Is(err, forge.ErrForbidden):
		return fmt.Errorf("the forge refused the project's FORGE_TOKEN: %w", err)
	}
	return err
}

func findingLines(r *worktrees.Refused) string {
	var b strings.Builder
	for i, f := range r.Findings {
		if i == 10 {
			fmt.Fprintf(&b, "• … and %d more\n", len(r.Findings)-10)
			break
		}
		fmt.Fprintf(&b, "• %s\n", f.String())
	}
	return strings.TrimRight(b.String(), "\n")
}

func (w chatWorkspaces) Diff(ctx context.Context, chatID agent.ChatID) (chatops.BranchDiff, error) {
	branch, st, patch, err := w.m.Diff(ctx, string(chatID))
	return chatops.BranchDiff{Branch: branch, Stat: st.String(), Patch: patch}, words(err)
}

func (w chatWorkspaces) Push(ctx context.Context, chatID agent.ChatID, by chatops.Requester) (string, error) {
	p, err := w.m.Push(ctx, string(chatID), person(by))
	if err != nil {
		return "", words(err)
	}
	return fmt.Sprintf("Pushed `%s` (%s) at %.12s.", p.Branch, p.Stat.String(), p.Head), nil
}

func (w chatWorkspaces) PR(ctx context.Context, chatID agent.ChatID, title string, by chatops.Requester, link string) (string, error) {
	pr, err := w.m.PR(ctx, string(chatID), title, person(by), link)
	if err != nil {
		return "", words(err)
	}
	verb := "Opened"
	if pr.Updated {
		verb = "Updated"
	}
	return fmt.Sprintf("%s pull request #%d: %s (`%s`, %s).", verb, pr.Number, pr.URL, pr.Branch, pr.Stat.String()), nil
}

func (w chatWorkspaces) Merge(ctx context.Context, chatID agent.ChatID, by chatops.Requester) (string, error) {
	l, err := w.m.Merge(ctx, string(chatID), person(by))
	if err != nil {
		return "", words(err)
	}
	if l.Commits == 0 {
		return fmt.Sprintf("Nothing to merge: %s already has this branch's work.", l.Base), nil
	}
	return fmt.Sprintf("Merged %d commit(s) into %s (%.12s → %.12s).", l.Commits, l.Base, l.From, l.To), nil
}

func (w chatWorkspaces) Close(ctx context.Context, chatID agent.ChatID, discard bool) (string, error) {
	rec, err := w.m.Close(ctx, string(chatID), discard)
	if err != nil {
		return "", words(err)
	}
	return fmt.Sprintf("Removed this chat's workspace (branch `%s`).", rec.Branch), nil
}

// gcWorkspaces removes the clones of chats idle longer than keep, every
// interval until ctx ends, telling each chat's thread (tell).
func gcWorkspaces(ctx context.Context, m *worktrees.Manager, keep, interval time.Duration, log *slog.Logger, tell func(ctx context.Context, chatID agent.ChatID, text string)) {
	if keep <= 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		removed, failed, err := m.GC(ctx, keep, false)
		if err != nil {
			log.Warn("workspace gc", "err", err)
		}
		for _, r := range removed {
			tell(ctx, agent.ChatID(r.ChatID), fmt.Sprintf("This chat was idle for %s, so its workspace (branch `%s`) was removed; its pushed work stays on the remote.", keep, r.Branch))
		}
		for id, err := range failed {
			log.Info("workspace gc: kept", logkey.ChatID, id, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// cloneProject makes project name's main clone of repo at base ("" is the
// repository's default branch, which is then recorded), as the workspaces
// of serve will use it.
func cloneProject(ctx context.Context, cfg *configs.Config, st *store.Store, name, repo, base string) (string, error) {
	m, err := newWorkspaces(cfg, st, slog.New(slog.DiscardHandler), "cli", nil, nil)
	if err != nil {
		return "", err
	}
	if base == "" {
		if base, err = m.DefaultBranch(ctx, repo); err != nil {
			return "", err
		}
		if err := st.SetProjectBase(ctx, name, base); err != nil {
			return "", err
		}
	}
	return m.Clone(ctx, worktrees.Repo{Project: name, Src: repo, Base: base})
}

const workspaceUsage = `threadline workspace list|diff|push|pr|merge|remove|gc [--chat ID] [--json] [--config F]
  list                      the chats' workspaces (also: threadline workspaces)
  diff --chat ID            the chat's branch against its base
  push --chat ID            commit what the agent left, check and push the branch
  pr --chat ID [--title T]  push and open (or update) the branch's pull request
  merge --chat ID           land the branch on its base
  remove --chat ID [--discard]  remove the chat's workspace (--discard: even with unpushed work)
  gc [--dry-run]            remove the workspaces idle longer than workspaces.keep`

// cmdWorkspace is `threadline workspace` (and `threadline workspaces`, its
// list), for scripts: the thread commands' work on a chat given by id, run
// as serve runs it (the git side as the agent, in its sandbox).
func cmdWorkspace(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return &exitError{2, errors.New("usage: " + workspaceUsage)}
	}
	sub := args[0]
	fs := newFlagSet("workspace "+sub, stdout, stderr, workspaceUsage)
	config := fs.String("config", "", "config file")
	chat := fs.String("chat", "", "the chat's id, or a unique prefix of it (at least 4 characters)")
	asJSON := fs.Bool("json", false, "JSON output")
	title := fs.String("title", "", "the pull request's title (pr; default: the chat's prompt)")
	discard := fs.Bool("discard", false, "remove even with unpushed work (remove)")
	dryRun := fs.Bool("dry-run", false, "only list what would go (gc)")
	if _, err := parseExactly(fs, args[1:]); err != nil {
		return err
	}
	needsChat := sub != "list" && sub != "gc"
	if needsChat && *chat == "" {
		return &exitError{2, fmt.Errorf("workspace %s needs --chat ID", sub)}
	}
	cfg, st, err := openStore(ctx, *config, stderr)
	if err != nil {
		return err
	}
	defer st.Close()
	if *chat, err = resolveChat(ctx, st, *chat); err != nil {
		return err
	}
	log := newLogger(stderr, slog.LevelWarn, cfg)
	host, _, err := cfg.Host.Resolve()
	if err != nil {
		return err
	}
	var sb *execution.Sandboxing
	if host.Sandbox {
		set, err := loadAgents(cfg, log)
		if err != nil {
			return err
		}
		if sb, err = sandboxing(cfg, set, host.Iso); err != nil {
			return err
		}
	}
	m, err := newWorkspaces(cfg, st, log, fmt.Sprintf("cli:%d", os.Getpid()), host.Iso, sb)
	if err != nil {
		return err
	}
	by := worktrees.Person{ID: "console:" + console.UserName(), Name: console.UserName()}
	out := func(v any, text string) error {
		if *asJSON {
			return json.NewEncoder(stdout).Encode(v)
		}
		_, err := fmt.Fprintln(stdout, text)
		return err
	}
	switch sub {
	case "list", "ls":
		recs, err := m.List(ctx)
		if err != nil {
			return err
		}
		if *asJSON {
			return json.NewEncoder(stdout).Encode(recs)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "CHAT\tPROJECT\tBRANCH\tSTATE\tUSED\tPR\tPATH")
		for _, r := range recs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ChatID, orDash(r.Project), r.Branch, r.State, r.UsedAt.Format(time.DateTime), orDash(r.PRURL), r.Path)
		}
		return tw.Flush()
	case "diff":
		branch, stat, patch, err := m.Diff(ctx, *chat)
		if err != nil {
			return words(err)
		}
		return out(map[string]any{"branch": branch, "stat": stat, "patch": string(patch)}, fmt.Sprintf("%s: %s\n%s", branch, stat.String(), patch))
	case "push":
		p, err := m.Push(ctx, *chat, by)
		if err != nil {
			return words(err)
		}
		return out(p, fmt.Sprintf("pushed %s (%s) at %s", p.Branch, p.Stat.String(), p.Head))
	case "pr":
		p, err := m.PR(ctx, *chat, *title, by, "")
		if err != nil {
			return words(err)
		}
		return out(p, fmt.Sprintf("pull request #%d: %s", p.Number, p.URL))
	case "merge":
		l, err := m.Merge(ctx, *chat, by)
		if err != nil {
			return words(err)
		}
		return out(l, fmt.Sprintf("merged %d commit(s) into %s (%s)", l.Commits, l.Base, l.To))
	case "remove", "rm":
		r, err := m.Close(ctx, *chat, *discard)
		if err != nil {
			return words(err)
		}
		return out(r, "removed the workspace of chat "+r.ChatID+" (branch "+r.Branch+")")
	case "gc":
		removed, failed, err := m.GC(ctx, cfg.KeepWorkspaces(), *dryRun)
		if err != nil {
			return err
		}
		for _, r := range removed {
			verb := "removed"
			if *dryRun {
				verb = "would remove"
			}
			fmt.Fprintf(stdout, "%s %s (branch %s, last used %s)\n", verb, r.ChatID, r.Branch, r.UsedAt.Format(time.DateTime))
		}
		for id, err := range failed {
			fmt.Fprintf(stderr, "kept %s: %v\n", id, err)
		}
		return nil
	}
	return &exitError{2, fmt.Errorf("workspace: unknown subcommand %q\nusage: %s", sub, workspaceUsage)}
}

// orDash is s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
