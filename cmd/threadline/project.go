// threadline project: projects, their LXD containers and secrets; the
// preparer's wiring.

package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/execution"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/agentcore/redact"
	"github.com/threadline-bot/threadline/configs"
	"github.com/threadline-bot/threadline/store"
)

const projectUsage = `Usage:
  threadline project add NAME --container C [--image I] [--workspace HOST_DIR]
                         [--channels C1,C2] [--allow U1,U2] [--config F]
  threadline project access NAME [--channels C1,C2] [--allow U1,U2] [--config F]
  threadline project list [--config F]
  threadline project remove NAME [--delete-container] [--config F]
  threadline project secret set PROJECT KEY [--config F]    (the value is read from stdin)
  threadline project secret list PROJECT [--config F]       (names only)
  threadline project secret unset PROJECT KEY [--config F]

A project chat runs its agent inside the project's LXD container, in /workspace.
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

var (
	// projectName is what chats and commands call a project.
	projectName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)
	// containerName follows LXD's instance names.
	containerName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]{0,62}$`)
	// secretKey is an environment variable name.
	secretKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// maxSecretBytes bounds a secret value read from stdin.
const maxSecretBytes = 64 << 10

func cmdProject(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, projectUsage)
		return &exitError{2, errors.New("project: missing subcommand")}
	}
	switch args[0] {
	case "add":
		return projectAdd(ctx, args[1:], stdout, stderr)
	case "list", "ls":
		return projectList(ctx, args[1:], stdout, stderr)
	case "access":
		return projectAccess(ctx, args[1:], stdout, stderr)
	case "remove", "rm":
		return projectRemove(ctx, args[1:], stdout, stderr)
	case "secret", "secrets":
		return projectSecret(ctx, args[1:], stdin, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, projectUsage)
		return nil
	}
	fmt.Fprint(stderr, projectUsage)
	return &exitError{2, fmt.Errorf("project: unknown subcommand %q", args[0])}
}

// parseArgs parses flags wherever they appear between the positional
// arguments and checks their count.
func parseArgs(fs *flag.FlagSet, args []string, want ...string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, &exitError{2, err}
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(pos) != len(want) {
		return nil, &exitError{2, fmt.Errorf("%s: want %s", fs.Name(), strings.Join(want, " "))}
	}
	return pos, nil
}

// openProjectStore loads the config and opens the migrated store.
func openProjectStore(ctx context.Context, config string, stderr io.Writer) (*configs.Config, *store.Store, error) {
	cfg, err := configs.Load(config)
	if err != nil {
		return nil, nil, err
	}
	st, err := store.OpenAndMigrate(ctx, cfg.Database.URL, newLogger(stderr, slog.LevelWarn, cfg))
	if err != nil {
		return nil, nil, err
	}
	return cfg, st, nil
}

func projectAdd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("project add", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "config file")
	container := fs.String("container", "", "LXD instance name of the project's container (required)")
	image := fs.String("image", "", "image the container is created from when missing (default: lxd.image)")
	workspace := fs.String("workspace", "", "directory of the LXD host mounted at /workspace")
	accessLists := accessFlags(fs)
	pos, err := parseArgs(fs, args, "NAME")
	if err != nil {
		return err
	}
	name := pos[0]
	if !projectName.MatchString(name) {
		return &exitError{2, fmt.Errorf("project add: invalid name %q (letters, digits, '.', '_', '-'; at most 63)", name)}
	}
	if !containerName.MatchString(*container) || strings.HasSuffix(*container, "-") {
		return &exitError{2, fmt.Errorf("project add: --container: invalid LXD instance name %q (a letter, then letters, digits and '-'; at most 63)", *container)}
	}
	if *image != "" && !execution.ValidImage(*image) {
		return &exitError{2, fmt.Errorf("project add: --image: invalid image reference %q (ALIAS, REMOTE:ALIAS or a fingerprint: letters, digits, '.', '_', '-', '/', not starting with '-')", *image)}
	}
	channels, allow, err := accessLists()
	if err != nil {
		return &exitError{2, err}
	}
	cfg, st, err := openProjectStore(ctx, *config, stderr)
	if err != nil {
		return err
	}
	defer st.Close()
	ws := *workspace
	if ws != "" {
		if !filepath.IsAbs(ws) {
			if ws, err = filepath.Abs(ws); err != nil {
				return err
			}
		}
		if cfg.LXD.Remote == "" {
			if fi, err := os.Stat(ws); err != nil || !fi.IsDir() {
				return fmt.Errorf("project add: --workspace %s is not a directory", ws)
			}
		}
	}
	p := store.Project{Name: name, Container: *container, Image: *image, Workspace: ws, Channels: channels, Allow: allow}
	if err := st.CreateProject(ctx, &p); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("project add: a project named %s, or one using container %s, exists already", name, *container)
		}
		return err
	}
	img := p.Image
	if img == "" {
		img = cfg.LXD.Image
	}
	fmt.Fprintf(stdout, "project %s added: container %s", name, lxcRef(cfg, p.Container))
	if img != "" {
		fmt.Fprintf(stdout, " (created from %s when missing)", img)
	}
	fmt.Fprintln(stdout)
	if img == "" {
		fmt.Fprintf(stderr, "note: neither --image nor lxd.image is set; the container %s must exist before the first run\n", p.Container)
	}
	printAccess(stdout, name, channels, allow)
	return nil
}

// printAccess says who may bind chats to the project.
func printAccess(w io.Writer, name string, channels, allow []string) {
	if len(channels) == 0 {
		fmt.Fprintf(w, "project %s is admin-only: no channel may bind a chat to it until you name channels with: threadline project access %s --channels C1,C2 [--allow U1,U2]\n", name, name)
		return
	}
	fmt.Fprintf(w, "chats may use it in: %s; bound by: %s (and admins)\n", strings.Join(channels, ", "), orAny(allow))
}

// projectAccess replaces a project's channels and users lists.
func projectAccess(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("project access", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "config file")
	accessLists := accessFlags(fs)
	pos, err := parseArgs(fs, args, "NAME")
	if err != nil {
		return err
	}
	name := pos[0]
	channels, allow, err := accessLists()
	if err != nil {
		return &exitError{2, err}
	}
	_, st, err := openProjectStore(ctx, *config, stderr)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.SetProjectAccess(ctx, name, channels, allow); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("project access: no project %s", name)
		}
		return err
	}
	printAccess(stdout, name, channels, allow)
	return nil
}

// accessFlags declares a project's --channels and --allow flags on fs (project
// add and project access); the returned func parses both once fs is parsed.
func accessFlags(fs *flag.FlagSet) func() (channels, allow []string, err error) {
	channelsFlag := fs.String("channels", "", "comma-separated channel or room ids whose chats may use the project, '*' for every channel (omitted: none, admins only)")
	allowFlag := fs.String("allow", "", "comma-separated user ids who may bind a chat to the project (omitted: anyone the channel lets)")
	return func() (channels, allow []string, err error) {
		if channels, err = accessList("channels", *channelsFlag); err != nil {
			return nil, nil, err
		}
		if allow, err = accessList("allow", *allowFlag); err != nil {
			return nil, nil, err
		}
		return channels, allow, nil
	}
}

// accessList parses a comma-separated --channels or --allow value: ids of 1
// to 255 bytes without whitespace or control characters.
func accessList(flagName, v string) ([]string, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var out []string
	for _, id := range strings.Split(v, ",") {
		id = strings.TrimSpace(id)
		if id == "" || len(id) > 255 || strings.ContainsFunc(id, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
			return nil, fmt.Errorf("project: --%s: invalid id %q (comma-separated ids without spaces)", flagName, id)
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

func lxcRef(cfg *configs.Config, container string) string {
	if cfg.LXD.Remote == "" {
		return container
	}
	return cfg.LXD.Remote + ":" + container
}

func projectList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("project list", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "config file")
	if _, err := parseArgs(fs, args); err != nil {
		return err
	}
	cfg, st, err := openProjectStore(ctx, *config, stderr)
	if err != nil {
		return err
	}
	defer st.Close()
	projects, err := st.ListProjects(ctx)
	if err != nil {
		return err
	}
	if len(projects) == 0 {
		fmt.Fprintln(stdout, "no projects; add one with: threadline project add NAME --container C")
		return nil
	}
	// The live state, when LXD answers in time; else the stored one.
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	live, lerr := (&execution.LXC{}).List(lctx, cfg.LXD.Remote)
	cancel()
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tCONTAINER\tIMAGE\tWORKSPACE\tSTATUS\tSECRETS\tCHANNELS\tALLOW")
	for _, p := range projects {
		status := p.Status
		switch {
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
		names, err := st.ProjectSecretNames(ctx, p.Name)
		if err != nil {
			return err
		}
		channels := "(admins only)"
		if len(p.Channels) > 0 {
			channels = strings.Join(p.Channels, ",")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", p.Name, lxcRef(cfg, p.Container), orDash(p.Image), orDash(p.Workspace), status, len(names), channels, orAny(p.Allow))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if lerr != nil {
		fmt.Fprintf(stderr, "note: LXD did not answer (%v); statuses are the stored ones\n", lerr)
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func projectRemove(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("project remove", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "config file")
	del := fs.Bool("delete-container", false, "also delete the container (and everything in it)")
	pos, err := parseArgs(fs, args, "NAME")
	if err != nil {
		return err
	}
	cfg, st, err := openProjectStore(ctx, *config, stderr)
	if err != nil {
		return err
	}
	defer st.Close()
	p, err := st.GetProject(ctx, pos[0])
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("project remove: no project %s", pos[0])
	}
	if err != nil {
		return err
	}
	if err := st.DeleteProject(ctx, p.Name); err != nil {
		return err
	}
	ref := lxcRef(cfg, p.Container)
	if !*del {
		fmt.Fprintf(stdout, "project %s removed with its secrets; container %s is kept (delete it with: lxc delete --force %s)\n", p.Name, ref, ref)
		return nil
	}
	err = (&execution.LXC{}).Delete(ctx, execution.Instance{Remote: cfg.LXD.Remote, Name: p.Container})
	switch {
	case errors.Is(err, execution.ErrInstanceNotFound):
		fmt.Fprintf(stdout, "project %s removed with its secrets; container %s did not exist\n", p.Name, ref)
	case err != nil:
		return fmt.Errorf("project %s removed, but deleting container %s failed: %w", p.Name, ref, err)
	default:
		fmt.Fprintf(stdout, "project %s removed with its secrets and container %s\n", p.Name, ref)
	}
	return nil
}

func projectSecret(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, projectUsage)
		return &exitError{2, errors.New("project secret: missing subcommand (set, list, unset)")}
	}
	sub := args[0]
	fs := flag.NewFlagSet("project secret "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "config file")
	var want []string
	switch sub {
	case "set", "unset":
		want = []string{"PROJECT", "KEY"}
	case "list", "ls":
		want = []string{"PROJECT"}
	default:
		fmt.Fprint(stderr, projectUsage)
		return &exitError{2, fmt.Errorf("project secret: unknown subcommand %q", sub)}
	}
	pos, err := parseArgs(fs, args[1:], want...)
	if err != nil {
		return err
	}
	project := pos[0]
	if len(pos) > 1 {
		if err := validSecretKey(pos[1]); err != nil {
			return &exitError{2, err}
		}
	}
	var value string
	if sub == "set" {
		// The value never comes from argv: that would leave it in shell
		// history and in the process list.
		if value, err = readSecret(stdin, stderr, pos[1]); err != nil {
			return err
		}
	}
	_, st, err := openProjectStore(ctx, *config, stderr)
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := st.GetProject(ctx, project); errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("project secret: no project %s", project)
	} else if err != nil {
		return err
	}
	switch sub {
	case "set":
		if err := st.SetProjectSecret(ctx, project, pos[1], value); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "secret %s of project %s set (%d bytes)\n", pos[1], project, len(value))
	case "unset":
		if err := st.DeleteProjectSecret(ctx, project, pos[1]); errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("project %s has no secret %s", project, pos[1])
		} else if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "secret %s of project %s removed\n", pos[1], project)
	default:
		names, err := st.ProjectSecretNames(ctx, project)
		if err != nil {
			return err
		}
		if len(names) == 0 {
			fmt.Fprintf(stdout, "project %s has no secrets\n", project)
		}
		for _, n := range names {
			fmt.Fprintln(stdout, n)
		}
	}
	return nil
}

// validSecretKey accepts environment variable names that may reach an agent.
func validSecretKey(k string) error {
	if !secretKey.MatchString(k) {
		return fmt.Errorf("project secret: invalid name %q (an environment variable name: letters, digits, '_', not starting with a digit)", k)
	}
	if procrun.IsBotSecret(k) {
		return fmt.Errorf("project secret: %s is reserved for the bot's own credentials (SLACK_*, MATRIX_*, THREADLINE_*, DATABASE_URL never reach an agent); choose another name", k)
	}
	return nil
}

// readSecret reads the value from stdin: all of it, without one trailing
// newline. On a terminal it asks for one line.
func readSecret(stdin io.Reader, stderr io.Writer, key string) (string, error) {
	if f, ok := stdin.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			fmt.Fprintf(stderr, "value of %s (one line; it is not printed back): ", key)
			line, err := bufio.NewReader(io.LimitReader(stdin, maxSecretBytes)).ReadString('\n')
			if err != nil && !errors.Is(err, io.EOF) {
				return "", err
			}
			return finishSecret(strings.TrimRight(line, "\r\n"), key)
		}
	}
	b, err := io.ReadAll(io.LimitReader(stdin, maxSecretBytes+1))
	if err != nil {
		return "", fmt.Errorf("project secret: read the value from stdin: %w", err)
	}
	if len(b) > maxSecretBytes {
		return "", fmt.Errorf("project secret: the value of %s is longer than %d bytes", key, maxSecretBytes)
	}
	v := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	return finishSecret(v, key)
}

func finishSecret(v, key string) (string, error) {
	if v == "" {
		return "", fmt.Errorf("project secret: empty value for %s (pipe it on stdin: threadline project secret set PROJECT %s < file)", key, key)
	}
	if strings.ContainsRune(v, 0) {
		return "", fmt.Errorf("project secret: the value of %s holds a NUL byte", key)
	}
	return v, nil
}

// projectStore adapts store.Store to execution.Projects.
type projectStore struct {
	st *store.Store
	// redact learns the secrets loaded for runs, for outbound redaction.
	redact *redact.Redactor
}

func (p projectStore) Project(ctx context.Context, name string) (execution.Project, error) {
	sp, err := p.st.GetProject(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return execution.Project{}, fmt.Errorf("%w (add it with: threadline project add %s --container C)", execution.ErrProjectNotFound, name)
	}
	if err != nil {
		return execution.Project{}, err
	}
	return execution.Project{Name: sp.Name, Container: sp.Container, Image: sp.Image, Workspace: sp.Workspace, Status: sp.Status}, nil
}

func (p projectStore) ProjectSecrets(ctx context.Context, name string) ([]agent.EnvVar, error) {
	secrets, err := p.st.ProjectSecrets(ctx, name)
	if err != nil {
		return nil, err
	}
	out := make([]agent.EnvVar, len(secrets))
	for i, s := range secrets {
		out[i] = agent.EnvVar{Key: s.Name, Value: s.Value}
		if p.redact != nil {
			// Whatever the agent prints of them is scrubbed before it is posted.
			p.redact.Add(s.Value)
		}
	}
	return out, nil
}

func (p projectStore) SetProjectStatus(ctx context.Context, name, status string) error {
	return p.st.SetProjectStatus(ctx, name, status)
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
		Projects:          projectStore{st: st, redact: r},
		Remote:            cfg.LXD.Remote,
		Image:             cfg.LXD.Image,
		Profiles:          profiles,
		Agents:            containerAgents(),
		Instructions:      cfg.LXD.Instructions,
		CredentialTimeout: cfg.LXD.CredentialSyncTimeout.Duration,
	})
}
