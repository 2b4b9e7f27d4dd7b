// Preparer: resolve a project chat's container, start or create it, provision it.

package execution

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/logkey"
)

// System event subtypes the preparer emits.
const (
	SubtypeContainerStarting  = "container_starting"
	SubtypeContainerPreparing = "container_preparing"
)

// StatusRunning is the stored project status after a successful start.
const StatusRunning = "running"

// DefaultCredentialTimeout bounds the credential sync after a run.
const DefaultCredentialTimeout = 30 * time.Second

// Errors of the preparer.
var (
	// ErrProjectNotFound is returned (by Projects, passed through) when the
	// chat names a project that does not exist.
	ErrProjectNotFound = errors.New("project not found")
	// ErrNoImage is returned when a missing container has to be created and
	// neither the project nor the configuration names an image.
	ErrNoImage = errors.New("no image to create the container from")
	// ErrAgentMissing is returned when the agent CLI is not on the
	// container's PATH; the text has the install hint. It wraps
	// agent.ErrNotInstalled.
	ErrAgentMissing = fmt.Errorf("%w in the project container", agent.ErrNotInstalled)
)

// Project is the part of a project the preparer needs.
type Project struct {
	Name string
	// Container is the LXD instance name.
	Container string
	// Image creates the container when it is missing; empty uses Options.Image.
	Image string
	// Workspace is a directory on the LXD host mounted at /workspace when the
	// container is created; empty mounts nothing.
	Workspace string
	// Status is the last stored container status ("running" after a start).
	Status string
}

// Projects is the storage the preparer reads projects and secrets from.
type Projects interface {
	// Project returns the project or an error wrapping ErrProjectNotFound.
	Project(ctx context.Context, name string) (Project, error)
	// ProjectSecrets returns the project's secrets, in a stable order.
	ProjectSecrets(ctx context.Context, name string) ([]agent.EnvVar, error)
	// SetProjectStatus records the container status.
	SetProjectStatus(ctx context.Context, name, status string) error
}

// Agent is what the preparer knows about one agent CLI inside a container.
type Agent struct {
	// Bin is the executable inside the container when the run names none;
	// empty means the provider id.
	Bin string
	// InstallHint is the command that installs the CLI, shown when missing.
	InstallHint string
	// Instructions is where the shared instructions file goes inside the
	// container (e.g. /root/.claude/CLAUDE.md); empty: not pushed.
	Instructions string
	// Assets are non-secret files pushed before every run.
	Assets []Asset
	// Links are symbolic links created before every run (skill
	// compatibility links).
	Links []Link
	// Credentials are pushed from the host before a run when the host file
	// exists, and copied back after a completed run when the container's
	// copy changed (the agent refreshed a token). None: no credential sync.
	Credentials []Credential
}

// Asset is a host file pushed into the container.
type Asset struct {
	// Source is the host path; a missing file is skipped.
	Source string
	// Path is the absolute path inside the container.
	Path string
	// Mode defaults to 0644.
	Mode os.FileMode
}

// Link is a symbolic link inside the container: Path -> Target.
type Link struct {
	Path   string
	Target string
}

// Credential pairs a host credential file with its place in the container.
type Credential struct {
	Host string
	Path string
}

// Options configure a Preparer.
type Options struct {
	// LXD is the seam to LXD; nil means &LXC{Bin: Client}.
	LXD LXD
	// Projects reads projects and their secrets; required.
	Projects Projects
	// Client is the lxc executable runs use (agent.ContainerTarget.Client).
	Client string
	// Remote is the lxc remote projects' containers live on ("" = local).
	Remote string
	// Image creates missing containers of projects that name none.
	Image string
	// Profiles are applied to created containers; none means LXD's default.
	Profiles []string
	// Agents maps a provider to its container profile; a provider without
	// an entry uses its id as the executable and syncs nothing.
	Agents map[agent.ProviderID]Agent
	// Instructions is a host file of shared instructions pushed to every
	// agent's Instructions path; empty pushes nothing.
	Instructions string
	// CredentialTimeout bounds Completed; zero means 30 s.
	CredentialTimeout time.Duration
}

// Preparer readies project containers. It is safe for concurrent use;
// preparations of one container are serialized.
type Preparer struct {
	log  *slog.Logger
	opts Options

	mu          sync.Mutex
	locks       map[string]chan struct{}
	provisioned map[string]bool
}

// New returns a Preparer. A nil logger discards logs. opts.Projects is
// required (New panics without it: a wiring error).
func New(logger *slog.Logger, opts Options) *Preparer {
	if opts.Projects == nil {
		panic("execution: Options.Projects is required")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if opts.LXD == nil {
		opts.LXD = &LXC{Bin: opts.Client, Logger: logger}
	}
	if opts.CredentialTimeout <= 0 {
		opts.CredentialTimeout = DefaultCredentialTimeout
	}
	return &Preparer{log: logger, opts: opts, locks: map[string]chan struct{}{}, provisioned: map[string]bool{}}
}

func (p *Preparer) agent(id agent.ProviderID) Agent {
	a := p.opts.Agents[id]
	if a.Bin == "" {
		a.Bin = string(id)
	}
	return a
}

// lock serializes work on one container.
func (p *Preparer) lock(ctx context.Context, key string) (func(), error) {
	p.mu.Lock()
	ch, ok := p.locks[key]
	if !ok {
		ch = make(chan struct{}, 1)
		p.locks[key] = ch
	}
	p.mu.Unlock()
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (p *Preparer) setProvisioned(key string, v bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.provisioned[key] = v
}

func (p *Preparer) isProvisioned(key string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.provisioned[key]
}

func system(subtype, text string) agent.Event {
	return agent.Event{Type: agent.EventSystem, Subtype: subtype, Text: text}
}

// Prepare readies the container of req.Project for a run of provider and
// returns the target the provider executes in (see the package doc), or
// nil for a project without a container, whose chats run on this host. emit
// receives the system/container_* events; it is the run's event path. The
// errors name the container (the caller names the project); they never
// contain a secret value.
func (p *Preparer) Prepare(ctx context.Context, provider agent.ProviderID, req agent.RunRequest, emit func(agent.Event)) (*agent.ContainerTarget, error) {
	if req.Project == "" {
		return nil, fmt.Errorf("%w: the chat has no project", ErrProjectNotFound)
	}
	proj, err := p.opts.Projects.Project(ctx, req.Project)
	if err != nil {
		return nil, err
	}
	if proj.Container == "" {
		return nil, nil // a host project: its chats run on this host
	}
	in := Instance{Remote: p.opts.Remote, Name: proj.Container}
	log := p.log.With(logkey.Project, proj.Name, logkey.Container, in.Ref(), logkey.ChatID, req.ChatID, logkey.RunID, req.RunID)
	unlock, err := p.lock(ctx, in.Ref())
	if err != nil {
		return nil, err
	}
	defer unlock()

	created, err := p.ensureRunning(ctx, log, proj, in, emit)
	if err != nil {
		return nil, err
	}
	if proj.Status != StatusRunning {
		if err := p.opts.Projects.SetProjectStatus(ctx, proj.Name, StatusRunning); err != nil {
			log.WarnContext(ctx, "record container status", "err", err)
		}
	}
	prof := p.agent(provider)
	bin := req.Bin
	if bin == "" {
		bin = prof.Bin
	}
	if created || !p.isProvisioned(in.Ref()) {
		emit(system(SubtypeContainerPreparing, fmt.Sprintf("Preparing container %s for project %s.", in.Ref(), proj.Name)))
		if err := p.opts.LXD.SetConfig(ctx, in, "boot.autostart", "true"); err != nil {
			log.WarnContext(ctx, "enable boot autostart", "err", err)
		}
	}
	if err := p.provision(ctx, log, in, proj, prof, bin); err != nil {
		return nil, err
	}
	p.setProvisioned(in.Ref(), true)

	secrets, err := p.opts.Projects.ProjectSecrets(ctx, proj.Name)
	if err != nil {
		// Best-effort: the run goes on without them.
		log.WarnContext(ctx, "load project secrets; running without them", "err", err)
		secrets = nil
	}
	return &agent.ContainerTarget{
		Client:   p.opts.Client,
		Remote:   in.Remote,
		Instance: in.Name,
		Workdir:  agent.DefaultWorkdir,
		Secrets:  secrets,
	}, nil
}

// ensureRunning always starts the container and creates it when LXD does not
// know it. It reports whether the container was created.
func (p *Preparer) ensureRunning(ctx context.Context, log *slog.Logger, proj Project, in Instance, emit func(agent.Event)) (bool, error) {
	announced := false
	if proj.Status != StatusRunning {
		emit(system(SubtypeContainerStarting, fmt.Sprintf("Starting container %s for project %s.", in.Ref(), proj.Name)))
		announced = true
	}
	err := p.opts.LXD.Start(ctx, in)
	if err == nil {
		return false, nil
	}
	if !errors.Is(err, ErrInstanceNotFound) {
		return false, fmt.Errorf("start container %s: %w", in.Ref(), err)
	}
	image := proj.Image
	if image == "" {
		image = p.opts.Image
	}
	if image == "" {
		return false, fmt.Errorf("container %s does not exist: %w (set the project's --image or lxd.image)", in.Ref(), ErrNoImage)
	}
	if !announced {
		emit(system(SubtypeContainerStarting, fmt.Sprintf("Container %s of project %s was not found; creating it from image %s.", in.Ref(), proj.Name, image)))
	}
	log.InfoContext(ctx, "creating container", "image", image)
	p.setProvisioned(in.Ref(), false)
	if err := p.opts.LXD.Create(ctx, in, image, p.opts.Profiles); err != nil {
		// Another replica may have created it in the meantime.
		if serr := p.opts.LXD.Start(ctx, in); serr == nil {
			return false, nil
		}
		return false, fmt.Errorf("create container %s from %s: %w", in.Ref(), image, err)
	}
	if err := p.opts.LXD.SetConfig(ctx, in, "boot.autostart", "true"); err != nil {
		log.WarnContext(ctx, "enable boot autostart", "err", err)
	}
	if err := p.opts.LXD.Start(ctx, in); err != nil {
		return false, fmt.Errorf("start new container %s: %w", in.Ref(), err)
	}
	// The workspace is attached to the running container: only then does
	// LXD tell whether it can shift ids (a stopped one accepts shift=true and
	// then fails to start).
	if proj.Workspace != "" {
		if err := p.mountWorkspace(ctx, log, in, proj.Workspace); err != nil {
			// Without its workspace the container is not what the project
			// asks for: remove it so that the next run tries again.
			if derr := p.opts.LXD.Delete(context.WithoutCancel(ctx), in); derr != nil {
				log.WarnContext(ctx, "delete half-created container", "err", derr)
			}
			return false, err
		}
	}
	return true, nil
}

// mountWorkspace attaches the project's host directory at /workspace, with
// id shifting when the host supports it.
func (p *Preparer) mountWorkspace(ctx context.Context, log *slog.Logger, in Instance, dir string) error {
	err := p.opts.LXD.AddDisk(ctx, in, "workspace", dir, agent.DefaultWorkdir, true)
	if err != nil && strings.Contains(err.Error(), "idmap") {
		log.WarnContext(ctx, "no id shifting on this LXD host; the workspace's files keep their host owners (root shows as nobody)", "err", err)
		err = p.opts.LXD.AddDisk(ctx, in, "workspace", dir, agent.DefaultWorkdir, false)
	}
	if err != nil {
		return fmt.Errorf("mount workspace %s in %s: %w", dir, in.Ref(), err)
	}
	return nil
}

// prepareScript creates the directories given after the executable and
// checks that the executable is on PATH: exit 90 when a directory cannot be
// created, 91 when the executable is missing.
const prepareScript = `bin="$1"; shift
mkdir -p "$@" || exit 90
command -v "$bin" >/dev/null 2>&1 || exit 91`

// linkScript creates symbolic links from (target, path) argument pairs.
const linkScript = `while [ $# -ge 2 ]; do ln -sfn "$1" "$2" || exit 1; shift 2; done`

// provision creates /workspace and the directories of every file to push,
// checks the CLI, then pushes instructions, assets and credentials and creates
// the links. Only a missing directory or CLI is an error.
func (p *Preparer) provision(ctx context.Context, log *slog.Logger, in Instance, proj Project, prof Agent, bin string) error {
	if bin == "" || strings.HasPrefix(bin, "-") {
		return fmt.Errorf("%w: invalid executable name %q", ErrAgentMissing, bin)
	}
	dirs := []string{agent.DefaultWorkdir}
	seen := map[string]bool{agent.DefaultWorkdir: true}
	addDir := func(file string) {
		if d := path.Dir(file); path.IsAbs(file) && !seen[d] {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	if p.opts.Instructions != "" && prof.Instructions != "" {
		addDir(prof.Instructions)
	}
	for _, a := range prof.Assets {
		addDir(a.Path)
	}
	for _, l := range prof.Links {
		addDir(l.Path)
	}
	for _, c := range prof.Credentials {
		addDir(c.Path)
	}
	argv := append([]string{"sh", "-c", prepareScript, "threadline-prepare", bin}, dirs...)
	res, err := p.opts.LXD.Exec(ctx, in, argv, nil)
	if err != nil {
		return fmt.Errorf("prepare container %s: %w", in.Ref(), err)
	}
	switch res.ExitCode {
	case 0:
	case 91:
		msg := fmt.Sprintf("%s is not on the PATH of container %s", bin, in.Ref())
		if prof.InstallHint != "" {
			msg += fmt.Sprintf("; install it there, e.g.: lxc exec %s -- %s", in.Ref(), prof.InstallHint)
		}
		return fmt.Errorf("%w: %s", ErrAgentMissing, msg)
	default:
		return fmt.Errorf("prepare container %s: create %s: exit %d: %s", in.Ref(), strings.Join(dirs, " "),
			res.ExitCode, truncate(strings.TrimSpace(string(res.Stderr)), 512))
	}

	push := func(what, src, dst string, mode os.FileMode) {
		data, err := os.ReadFile(src)
		if errors.Is(err, os.ErrNotExist) {
			log.DebugContext(ctx, "nothing to push", "what", what, "source", src)
			return
		}
		if err != nil {
			log.WarnContext(ctx, "read file to push", "what", what, "source", src, "err", err)
			return
		}
		if err := p.opts.LXD.Push(ctx, in, dst, data, mode); err != nil {
			log.WarnContext(ctx, "push into container", "what", what, "path", dst, "err", err)
		}
	}
	if p.opts.Instructions != "" && prof.Instructions != "" {
		push("instructions", p.opts.Instructions, prof.Instructions, 0o644)
	}
	for _, a := range prof.Assets {
		mode := a.Mode
		if mode == 0 {
			mode = 0o644
		}
		push("asset", a.Source, a.Path, mode)
	}
	for _, c := range prof.Credentials {
		push("credentials", c.Host, c.Path, 0o600)
	}
	if len(prof.Links) > 0 {
		argv := []string{"sh", "-c", linkScript, "threadline-links"}
		for _, l := range prof.Links {
			argv = append(argv, l.Target, l.Path)
		}
		if res, err := p.opts.LXD.Exec(ctx, in, argv, nil); err != nil || res.ExitCode != 0 {
			log.WarnContext(ctx, "create links", "err", err, "exit_code", res.ExitCode, "stderr", truncate(string(res.Stderr), 512))
		}
	}
	return nil
}

// Completed copies the credentials the provider's agent declares back from
// the container to the host after a completed run, when they changed. It is
// best-effort (failures are logged) and bounded by Options.CredentialTimeout.
func (p *Preparer) Completed(ctx context.Context, provider agent.ProviderID, target *agent.ContainerTarget) {
	prof := p.agent(provider)
	if target == nil || len(prof.Credentials) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, p.opts.CredentialTimeout)
	defer cancel()
	in := Instance{Remote: target.Remote, Name: target.Instance}
	log := p.log.With(logkey.Container, in.Ref(), logkey.Agent, string(provider))
	for _, c := range prof.Credentials {
		data, err := p.opts.LXD.Pull(ctx, in, c.Path)
		if errors.Is(err, ErrFileNotFound) {
			continue
		}
		if err != nil {
			log.WarnContext(ctx, "credential sync: pull", "path", c.Path, "err", err)
			continue
		}
		if len(bytes.TrimSpace(data)) == 0 {
			continue
		}
		if old, err := os.ReadFile(c.Host); err == nil && bytes.Equal(old, data) {
			continue
		}
		if err := writeFileAtomic(c.Host, data); err != nil {
			log.WarnContext(ctx, "credential sync: write", "host_path", c.Host, "err", err)
			continue
		}
		log.InfoContext(ctx, "credentials synced from the container", "host_path", c.Host)
	}
}

// writeFileAtomic writes data to name with mode 0600 through a temporary file
// in the same directory (created 0700 when missing).
func writeFileAtomic(name string, data []byte) error {
	dir := filepath.Dir(name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(name)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := f.Chmod(0o600); err != nil {
		_ = f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}
