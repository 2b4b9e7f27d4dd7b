// Package projects administers Threadline's projects over the store: the
// work of `threadline project` (add, access, list, remove and secrets, with
// the checks of names, container names, images and secret keys) and the
// store as the preparer's execution.Projects, which adds every project
// secret it loads to the redactor. Parsing the command line stays in
// cmd/threadline.
package projects

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/threadline-bot/threadline/agentcore/execution"
	"github.com/threadline-bot/threadline/store"
)

// ErrUsage marks a request refused before anything was done: a bad name,
// container, image, id list or secret key (a command's exit status 2).
var ErrUsage = errors.New("usage")

var (
	// projectName is what chats and commands call a project (at most 63
	// bytes; the lengths are checked apart: a counted repetition compiles
	// into a program of that many steps, kept for the life of the process).
	projectName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	// containerName follows LXD's instance names (at most 63 bytes).
	containerName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]*$`)
	// secretKey is an environment variable name.
	secretKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// branchName is a plain branch name (a subset of git's ref names; at most
	// 200 bytes).
	branchName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._/-]*$`)
)

// forges are the kinds of forge a project may name ("" for none).
var forges = []string{"gitea", "github", "gitlab"}

// MaxSecretBytes bounds a secret value.
const MaxSecretBytes = 64 << 10

// Admin runs the project commands over St and reports on Out (results) and
// Err (notes).
type Admin struct {
	St *store.Store
	// Remote is the lxc remote of the containers ("" the local socket);
	// Image the default image of new ones (lxd.remote, lxd.image).
	Remote, Image string
	Out, Err      io.Writer
	// LXC lists and deletes containers; nil uses the lxc command.
	LXC *execution.LXC
	// Clone makes a project's main clone (agentcore/worktrees): add runs it
	// for a project with a repository and removes the project again when
	// it fails (the repository cannot be cloned, or has no such base).
	Clone func(ctx context.Context, name, repo, base string) (dir string, err error)
}

// Project is a project to add.
type Project struct {
	Name, Container, Image, Workspace string
	// Channels and Allow say where chats may bind to it and who may.
	Channels, Allow []string
	// Repo is where the project's repository is cloned from (a git URL or a
	// host path, made absolute), Base the branch chats start from and land
	// on, Setup the command run in each new worktree, Forge ("", gitea,
	// github, gitlab) and ForgeURL where pull requests go. All optional.
	Repo, Base, Setup, Forge, ForgeURL string
}

func (a Admin) lxc() *execution.LXC {
	if a.LXC != nil {
		return a.LXC
	}
	return &execution.LXC{}
}

// ref is the container as lxc names it.
func (a Admin) ref(container string) string {
	if a.Remote == "" {
		return container
	}
	return a.Remote + ":" + container
}

// Check refuses a project whose name, container or image is malformed
// (ErrUsage), before the store is opened.
func (p Project) Check() error {
	if len(p.Name) > 63 || !projectName.MatchString(p.Name) {
		return fmt.Errorf("%w: project add: invalid name %q (letters, digits, '.', '_', '-'; at most 63)", ErrUsage, p.Name)
	}
	if p.Container == "" && p.Repo == "" {
		return fmt.Errorf("%w: project add: give --container (its chats run in that LXD container) or --repo (they run on this host, each in its own clone)", ErrUsage)
	}
	if p.Container != "" && p.Repo != "" {
		// A container's chats share its /workspace: a repository would be
		// cloned and never used, and the ship commands would find no branch.
		return fmt.Errorf("%w: project add: --repo with --container is not supported yet (a clone per chat inside the container comes later): use --repo alone (its chats run on this host, sandboxed, each in its own clone) or --container with --workspace", ErrUsage)
	}
	if p.Container != "" && (len(p.Container) > 63 || !containerName.MatchString(p.Container) || strings.HasSuffix(p.Container, "-")) {
		return fmt.Errorf("%w: project add: --container: invalid LXD instance name %q (a letter, then letters, digits and '-'; at most 63)", ErrUsage, p.Container)
	}
	if p.Image != "" && !execution.ValidImage(p.Image) {
		return fmt.Errorf("%w: project add: --image: invalid image reference %q (ALIAS, REMOTE:ALIAS or a fingerprint: letters, digits, '.', '_', '-', '/', not starting with '-')", ErrUsage, p.Image)
	}
	return p.checkRepo()
}

// checkRepo refuses malformed repository fields (ErrUsage).
func (p Project) checkRepo() error {
	if p.Repo != "" && (strings.HasPrefix(p.Repo, "-") || strings.ContainsFunc(p.Repo, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) })) {
		return fmt.Errorf("%w: project add: --repo: invalid repository %q (a git URL or a host path, without spaces, not starting with '-')", ErrUsage, p.Repo)
	}
	if p.Base != "" && (len(p.Base) > 200 || !branchName.MatchString(p.Base) || strings.Contains(p.Base, "..") || strings.Contains(p.Base, "//") ||
		strings.HasSuffix(p.Base, "/") || strings.HasSuffix(p.Base, ".") || strings.HasSuffix(p.Base, ".lock")) {
		return fmt.Errorf("%w: project add: --base: invalid branch name %q", ErrUsage, p.Base)
	}
	if strings.ContainsRune(p.Setup, 0) {
		return fmt.Errorf("%w: project add: --setup: the command holds a NUL byte", ErrUsage)
	}
	if p.Repo == "" && (p.Base != "" || p.Setup != "" || p.Forge != "" || p.ForgeURL != "") {
		return fmt.Errorf("%w: project add: --base, --setup and --forge need --repo", ErrUsage)
	}
	if p.Forge != "" && !slices.Contains(forges, p.Forge) {
		return fmt.Errorf("%w: project add: --forge: unknown forge %q (%s)", ErrUsage, p.Forge, strings.Join(forges, ", "))
	}
	if p.ForgeURL != "" {
		if p.Forge == "" {
			return fmt.Errorf("%w: project add: --forge-url needs --forge", ErrUsage)
		}
		if u, err := url.Parse(p.ForgeURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
			return fmt.Errorf("%w: project add: --forge-url: want an http(s) URL without credentials, got %q", ErrUsage, p.ForgeURL)
		}
	}
	return nil
}

// isRemote reports whether repo is a git URL rather than a host path: it
// has a scheme, or a ':' before its first '/' (git's scp-like user@host:path).
func isRemote(repo string) bool {
	if strings.Contains(repo, "://") {
		return true
	}
	colon := strings.IndexByte(repo, ':')
	slash := strings.IndexByte(repo, '/')
	return colon > 0 && (slash < 0 || colon < slash)
}

// Add stores p (checked first) and says where its container comes from and
// who may bind chats to it.
func (a Admin) Add(ctx context.Context, p Project) error {
	if err := p.Check(); err != nil {
		return err
	}
	ws := p.Workspace
	if ws != "" {
		var err error
		if ws, err = filepath.Abs(ws); err != nil {
			return err
		}
		if a.Remote == "" {
			if fi, err := os.Stat(ws); err != nil || !fi.IsDir() {
				return fmt.Errorf("project add: --workspace %s is not a directory", ws)
			}
		}
	}
	repo := p.Repo
	if repo != "" && !isRemote(repo) {
		var err error
		if repo, err = filepath.Abs(repo); err != nil {
			return err
		}
	}
	sp := store.Project{Name: p.Name, Container: p.Container, Image: p.Image, Workspace: ws, Channels: p.Channels, Allow: p.Allow,
		Repo: repo, Base: p.Base, Setup: p.Setup, Forge: p.Forge, ForgeURL: p.ForgeURL}
	if err := a.St.CreateProject(ctx, &sp); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("project add: a project named %s, or one using container %s, exists already", p.Name, p.Container)
		}
		return err
	}
	if repo != "" && a.Clone != nil {
		dir, err := a.Clone(ctx, sp.Name, repo, sp.Base)
		if err != nil {
			if derr := a.St.DeleteProject(context.WithoutCancel(ctx), sp.Name); derr != nil {
				return fmt.Errorf("project add: %w (and removing the project again failed: %v)", err, derr)
			}
			return fmt.Errorf("project add: %w; the project was not added", err)
		}
		fmt.Fprintf(a.Out, "project %s: %s cloned into %s (base %s); each chat gets its own clone and branch\n", sp.Name, repo, dir, orDefaultBase(sp.Base))
	}
	if sp.Container == "" {
		fmt.Fprintf(a.Out, "project %s added: its chats run on this host, isolated as host chats are\n", sp.Name)
		a.printAccess(sp.Name, sp.Channels, sp.Allow)
		return nil
	}
	img := sp.Image
	if img == "" {
		img = a.Image
	}
	fmt.Fprintf(a.Out, "project %s added: container %s", sp.Name, a.ref(sp.Container))
	if img != "" {
		fmt.Fprintf(a.Out, " (created from %s when missing)", img)
	}
	fmt.Fprintln(a.Out)
	if img == "" {
		fmt.Fprintf(a.Err, "note: neither --image nor lxd.image is set; the container %s must exist before the first run\n", sp.Container)
	}
	a.printAccess(sp.Name, sp.Channels, sp.Allow)
	return nil
}

// orDefaultBase names the base branch ("" is the repository's default).
func orDefaultBase(b string) string {
	if b == "" {
		return "its default branch"
	}
	return b
}

// printAccess says who may bind chats to the project.
func (a Admin) printAccess(name string, channels, allow []string) {
	if len(channels) == 0 {
		fmt.Fprintf(a.Out, "project %s is admin-only: no channel may bind a chat to it until you name channels with: threadline project access %s --channels C1,C2 [--allow U1,U2]\n", name, name)
		return
	}
	fmt.Fprintf(a.Out, "chats may use it in: %s; bound by: %s (and admins)\n", strings.Join(channels, ", "), orAny(allow))
}

// Access replaces a project's channels and users lists.
func (a Admin) Access(ctx context.Context, name string, channels, allow []string) error {
	if err := a.St.SetProjectAccess(ctx, name, channels, allow); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("project access: no project %s", name)
		}
		return err
	}
	a.printAccess(name, channels, allow)
	return nil
}

// AccessList parses a comma-separated --channels or --allow value: ids of 1
// to 255 bytes without whitespace or control characters (else ErrUsage).
func AccessList(flagName, v string) ([]string, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var out []string
	for _, id := range strings.Split(v, ",") {
		id = strings.TrimSpace(id)
		if id == "" || len(id) > 255 || strings.ContainsFunc(id, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
			return nil, fmt.Errorf("%w: project: --%s: invalid id %q (comma-separated ids without spaces)", ErrUsage, flagName, id)
		}
		out = append(out, id)
	}
	return out, nil
}

// orAny joins ids, or says "any".
func orAny(ids []string) string {
	if len(ids) == 0 {
		return "any"
	}
	return strings.Join(ids, ", ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// List prints the projects as a table: the live container status when LXD
// answers within 5 s, else the stored one.
func (a Admin) List(ctx context.Context) error {
	projects, err := a.St.ListProjects(ctx)
	if err != nil {
		return err
	}
	if len(projects) == 0 {
		fmt.Fprintln(a.Out, "no projects; add one with: threadline project add NAME --container C")
		return nil
	}
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	live, lerr := a.lxc().List(lctx, a.Remote)
	cancel()
	tw := tabwriter.NewWriter(a.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tCONTAINER\tIMAGE\tWORKSPACE\tSTATUS\tSECRETS\tCHANNELS\tALLOW")
	for _, p := range projects {
		status := p.Status
		switch {
		case p.Container == "":
			status = "host"
		case lerr != nil:
			if status == "" {
				status = "-"
			}
			status += " (stored)"
		case live[p.Container] != "":
			status = strings.ToLower(live[p.Container])
		default:
			status = "missing"
		}
		names, err := a.St.ProjectSecretNames(ctx, p.Name)
		if err != nil {
			return err
		}
		channels := "(admins only)"
		if len(p.Channels) > 0 {
			channels = strings.Join(p.Channels, ",")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", p.Name, a.ref(p.Container), orDash(p.Image), orDash(p.Workspace), status, len(names), channels, orAny(p.Allow))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if lerr != nil {
		fmt.Fprintf(a.Err, "note: LXD did not answer (%v); statuses are the stored ones\n", lerr)
	}
	return nil
}

// Remove deletes a project and its secrets, and its container when
// deleteContainer is set.
func (a Admin) Remove(ctx context.Context, name string, deleteContainer bool) error {
	p, err := a.St.GetProject(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("project remove: no project %s", name)
	}
	if err != nil {
		return err
	}
	if err := a.St.DeleteProject(ctx, p.Name); err != nil {
		return err
	}
	ref := a.ref(p.Container)
	if !deleteContainer {
		fmt.Fprintf(a.Out, "project %s removed with its secrets; container %s is kept (delete it with: lxc delete --force %s)\n", p.Name, ref, ref)
		return nil
	}
	err = a.lxc().Delete(ctx, execution.Instance{Remote: a.Remote, Name: p.Container})
	switch {
	case errors.Is(err, execution.ErrInstanceNotFound):
		fmt.Fprintf(a.Out, "project %s removed with its secrets; container %s did not exist\n", p.Name, ref)
	case err != nil:
		return fmt.Errorf("project %s removed, but deleting container %s failed: %w", p.Name, ref, err)
	default:
		fmt.Fprintf(a.Out, "project %s removed with its secrets and container %s\n", p.Name, ref)
	}
	return nil
}
