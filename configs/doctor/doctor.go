// Package doctor checks a deployment as its config describes it: the config
// file, the database, the agent CLIs and their sign-in (under the agent
// user's home when host agents are isolated), LXD when projects need it, and
// the Slack and Matrix credentials, telling a platform that is unreachable
// from one that rejects the credentials. Each problem comes with its fix.
// SignInProblem is the same sign-in check for chat and run before the first
// prompt.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os/exec"
	"os/user"
	"slices"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/id"

	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/agentcore/redact"
	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/agentcore/workspace"
	slackbot "github.com/threadline-bot/threadline/bot/slack"
	"github.com/threadline-bot/threadline/configs"
	"github.com/threadline-bot/threadline/store"
)

// Agents is the agent table doctor checks.
type Agents interface {
	// Probe detects every agent (an error: the agents section is wrong).
	Probe(ctx context.Context) ([]registry.Report, error)
	// Definition is the definition of agent id.
	Definition(id string) (registry.Definition, bool)
	// Default is the agent chat and run start with, "" when none can run.
	Default() string
	// IDs lists the known agent ids, sorted (nil: the table did not load).
	IDs() []string
}

// finding is the outcome of one check.
type finding struct {
	name string
	ok   bool
	// warn marks a problem that does not stop Threadline from running.
	warn bool
	// note marks what is missing but wanted by nobody's config: said,
	// not counted as a problem.
	note   bool
	detail string
	fix    string
}

// Run runs every check of cfg (loaded from a file, else the built-in
// defaults) and prints the findings to w with secrets redacted. It returns
// the problems found: failures and warnings alike, so that a caller's exit
// status is non-zero whenever doctor reports one.
//
// tools is the thread tools' MCP server (threadline-mcp): its path, or ""
// when the agents cannot run it, problem saying why (not installed, and
// where it was looked for; not runnable by the agent user).
func Run(ctx context.Context, cfg *configs.Config, agents Agents, tools, problem string, w io.Writer) int {
	where := cfg.Path()
	if where == "" {
		where = "none found: built-in defaults (" + strings.Join(configs.Paths(), ", ") + ")"
	}
	findings := []finding{{name: "config", ok: true, detail: where}}
	for _, c := range []func(context.Context, *configs.Config, Agents) []finding{checkDatabase, checkIsolation, checkAgents, checkAgentIDs, checkLXD, checkProjects, checkSlack, checkMatrix} {
		findings = append(findings, c(ctx, cfg, agents)...)
	}
	findings = append(findings, threadTools(tools, problem))
	return report(w, redact.New(cfg.Secrets()...), findings)
}

// ConfigError prints the finding of a config that does not load.
func ConfigError(w io.Writer, err error) {
	report(w, redact.New(), []finding{{name: "config", detail: err.Error(), fix: "Fix the config file; see configs/threadline.example.yaml."}})
}

// report prints the findings with secrets redacted and returns the
// problems: every finding that is not ok, a warning as well as a failure, so
// that doctor's exit status is non-zero whenever it reports one.
func report(w io.Writer, r *redact.Redactor, fs []finding) int {
	problems := 0
	for _, f := range fs {
		mark := "ok  "
		switch {
		case f.note:
			mark = "note"
		case !f.ok && f.warn:
			mark, problems = "warn", problems+1
		case !f.ok:
			mark, problems = "FAIL", problems+1
		}
		fmt.Fprintf(w, "%s  %-22s %s\n", mark, f.name, r.String(f.detail))
		if !f.ok && f.fix != "" {
			fmt.Fprintf(w, "      %-22s fix: %s\n", "", r.String(f.fix))
		}
	}
	return problems
}

// threadTools says whether runs get the thread tools (send_file): without
// a threadline-mcp the agents may run, they go on without them.
func threadTools(path, problem string) finding {
	if path == "" {
		return finding{name: "thread tools", note: true, detail: problem + ": runs go on without send_file, fetch_thread_file and the agent's images"}
	}
	return finding{name: "thread tools", ok: true, detail: path}
}

// checkIsolation says how host agents run: the sandbox, the uid switch
// alone (auto on a kernel without Landlock says so, as a warning), or not
// at all.
func checkIsolation(_ context.Context, cfg *configs.Config, _ Agents) []finding {
	host, why, err := cfg.Host.Resolve()
	switch {
	case err != nil:
		return []finding{{name: "isolation", detail: err.Error(), fix: "Create the agent user (useradd --system --create-home --home-dir /var/lib/threadline-agent threadline-agent), or change host.isolation."}}
	case why != nil:
		return []finding{{name: "isolation", detail: "host agents would run as the bot's own user: " + why.Error(),
			fix: "Create the agent user (useradd --system --create-home --home-dir /var/lib/threadline-agent threadline-agent), or set host.isolation: off knowingly."}}
	case !host.Isolated(): // host.isolation: off, set knowingly
		return []finding{{name: "isolation", ok: true, detail: host.Describe() + " (host.isolation: off)"}}
	case !host.Sandbox:
		return []finding{{name: "isolation", warn: cfg.Host.Isolation != configs.IsolationUID, detail: host.Describe(),
			ok: cfg.Host.Isolation == configs.IsolationUID, fix: "A kernel with Landlock ABI 4 (Linux 6.7 or later) lets auto confine each chat to its own workspace."}}
	}
	return []finding{{name: "isolation", ok: true, detail: host.Describe()}}
}

func checkDatabase(ctx context.Context, cfg *configs.Config, _ Agents) []finding {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := store.Open(ctx, cfg.Database.URL, slog.New(slog.DiscardHandler))
	if err != nil {
		fix := "Check database.url: the server must be running and reachable, the user and password right."
		if !strings.HasPrefix(cfg.Database.URL, "postgres") {
			fix = "Check that the directory of the SQLite file is writable."
		}
		return []finding{{name: "database", detail: err.Error(), fix: fix}}
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return []finding{{name: "database", detail: err.Error(), fix: "Run `threadline migrate` and read its error."}}
	}
	return []finding{{name: "database", ok: true, detail: st.Dialect() + ", schema up to date"}}
}

func checkAgents(ctx context.Context, cfg *configs.Config, set Agents) []finding {
	reports, err := set.Probe(ctx)
	if err != nil {
		return []finding{{name: "agents", detail: err.Error(), fix: "Fix the agents section of the config."}}
	}
	var out []finding
	var missing []string
	installed := 0
	def := set.Default()
	host, _, _ := cfg.Host.Resolve() // the agent user's home holds its logins
	iso := host.Iso
	for _, r := range reports {
		f := finding{name: "agent " + r.ID}
		switch {
		case r.Status == registry.StatusMissing:
			if _, configured := cfg.Agents[r.ID]; !configured && r.ID != cfg.Defaults.Agent {
				missing = append(missing, r.ID)
				continue
			}
			f.detail, f.fix = "not installed", "Install it: "+r.InstallHint
		case r.Status == registry.StatusBroken:
			f.detail = strings.Join(r.Problems, "; ")
			f.fix = "Run the CLI by hand to see what it needs (sign-in, a newer version)."
		case r.VersionWarning != "" || len(r.Problems) > 0:
			f.warn, f.detail = true, strings.TrimSpace(r.Version+" — "+strings.Join(append([]string{r.VersionWarning}, r.Problems...), "; "))
			f.fix = "It may work; Threadline was verified with other versions of this CLI."
			installed++
		default:
			f.ok, f.detail = true, r.Version
			if r.Auth != "" && r.Auth != registry.AuthUnknown {
				f.detail += ", auth " + string(r.Auth)
			}
			installed++
		}
		if r.Status != registry.StatusMissing && r.Auth == registry.AuthMissing {
			f = signInFinding(f, r, cfg, set, def, iso)
		}
		out = append(out, f)
	}
	if installed == 0 {
		out = append(out, finding{name: "agents", detail: "no agent CLI is installed", fix: "Install at least one, e.g. npm install -g @anthropic-ai/claude-code (`threadline agents --all` lists them)"})
	} else if len(missing) > 0 {
		out = append(out, finding{name: "other agents", ok: true, detail: "not installed: " + strings.Join(missing, ", ")})
	}
	return out
}

// checkLXD checks LXD when something needs it: lxd set in the config or a
// project with a container in the database (without the database: a
// channel or room bound to a project).
func checkLXD(ctx context.Context, cfg *configs.Config, _ Agents) []finding {
	why := lxdNeeded(ctx, cfg)
	if why == "" {
		return []finding{{name: "lxd", ok: true, detail: "not needed: no projects (project chats need it)"}}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	target := "local:"
	if cfg.LXD.Remote != "" {
		target = cfg.LXD.Remote + ":"
	}
	out, err := exec.CommandContext(ctx, "lxc", "list", target, "--format", "csv", "-c", "n").CombinedOutput()
	if err != nil {
		return []finding{{name: "lxd", detail: fmt.Sprintf("needed (%s); lxc list %s: %v: %s", why, target, err, strings.TrimSpace(string(out))),
			fix: "Start the LXD daemon (lxd init if it was never set up) and make sure this user may use it."}}
	}
	n := len(strings.Fields(string(out)))
	return []finding{{name: "lxd", ok: true, detail: fmt.Sprintf("%s reachable, %d instance(s) (needed: %s)", target, n, why)}}
}

// checkProjects checks again what project add checked of each project that
// owns a repository: its main clone is on this host, is a git repository,
// has the base branch and leaves it checked out nowhere (merge lands there).
func checkProjects(ctx context.Context, cfg *configs.Config, _ Agents) []finding {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	st, err := store.Open(ctx, cfg.Database.URL, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil // the database check reports it
	}
	defer st.Close()
	ps, err := st.ListProjects(ctx)
	if err != nil {
		return []finding{{name: "projects", detail: "cannot list them: " + err.Error(), fix: "Run threadline migrate."}}
	}
	git := workspace.New(workspace.Options{Timeout: 20 * time.Second})
	var out []finding
	for _, p := range ps {
		if p.Repo == "" {
			continue
		}
		f := finding{name: "project " + p.Name, ok: true, detail: fmt.Sprintf("%s cloned in %s, base %s", p.Repo, p.CloneDir, p.Base)}
		switch err := git.Check(ctx, p.CloneDir, p.Base); {
		case p.CloneDir == "":
			f.ok, f.detail = false, p.Repo+" is not cloned on this host"
			f.fix = fmt.Sprintf("Remove the project and add it again here (threadline project remove %s; threadline project add %s --repo ...).", p.Name, p.Name)
		case errors.Is(err, workspace.ErrBaseMissing):
			f.ok, f.detail = false, fmt.Sprintf("the base branch %s is not in the clone %s", p.Base, p.CloneDir)
			f.fix = "Push the branch to " + p.Repo + " (the clone fetches it) or add the project again with --base naming an existing branch."
		case errors.Is(err, workspace.ErrBaseCheckedOut):
			f.ok, f.detail = false, fmt.Sprintf("the base branch %s is checked out in a working tree of %s, so merge cannot land on it", p.Base, p.CloneDir)
			f.fix = "In that working tree, check out another branch (git switch --detach)."
		case err != nil:
			f.ok, f.detail = false, fmt.Sprintf("the clone %s: %v", p.CloneDir, err)
			f.fix = "Restore the directory, or remove the project and add it again."
		}
		out = append(out, f)
	}
	return out
}

// checkSlack calls auth.test with the bot token and, in socket mode,
// apps.connections.open with the app token, and reports each: ok, refused
// (Slack's error), or not checked because Slack could not be reached.
func checkSlack(ctx context.Context, cfg *configs.Config, _ Agents) []finding {
	if cfg.Slack == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	apiURL := cfg.Slack.APIURL
	if apiURL == "" {
		apiURL = slackbot.DefaultAPIURL
	}
	var out []finding
	res, err := slack.New(cfg.Slack.BotToken, slack.OptionAPIURL(apiURL)).AuthTestContext(ctx)
	if err != nil {
		out = append(out, slackFailure("slack", "auth.test", apiURL, err,
			"Check slack.bot_token (xoxb-..., from the app's OAuth page after installing it) and that the app is installed in the workspace."))
	} else {
		out = append(out, finding{name: "slack", ok: true, detail: fmt.Sprintf("team %s (%s) as %s", res.Team, res.TeamID, res.User)})
	}
	if cfg.Slack.Mode == slackbot.ModeHTTP {
		return out
	}
	const appFix = "Check slack.app_token (xapp-..., an app-level token with the connections:write scope, from the app's Basic Information page) and that Socket Mode is enabled for the app."
	if cfg.Slack.AppToken == "" {
		return append(out, finding{name: "slack app token", detail: "slack.app_token is not set (socket mode needs it)", fix: appFix})
	}
	// The URL it hands out is not dialled: it expires unused.
	if _, _, err := slack.New("", slack.OptionAppLevelToken(cfg.Slack.AppToken), slack.OptionAPIURL(apiURL)).StartSocketModeContext(ctx); err != nil {
		return append(out, slackFailure("slack app token", "apps.connections.open", apiURL, err, appFix))
	}
	return append(out, finding{name: "slack app token", ok: true, detail: "apps.connections.open: socket mode can connect"})
}

// slackFailure is the finding of Slack call method failing with err: Slack
// refusing the token (fix says what to check), Slack answering with an
// error of its own, or Slack unreachable.
func slackFailure(name, method, apiURL string, err error, fix string) finding {
	if rejected, why := SlackRejected(err); rejected {
		return finding{name: name, detail: "rejected: " + method + ": " + why, fix: fix}
	}
	var se slack.SlackErrorResponse
	var sc slack.StatusCodeError
	switch {
	case errors.As(err, &se):
		return finding{name: name, detail: method + " at " + apiURL + " answered " + se.Err + "; the token was not checked",
			fix: "Try again later if Slack reports an outage."}
	case errors.As(err, &sc):
		return finding{name: name, detail: method + " at " + apiURL + " answered " + sc.Status,
			fix: "Check slack.api_url, or try again later if Slack reports an outage."}
	}
	return finding{name: name, detail: "unreachable: " + method + " at " + apiURL + ": " + err.Error(),
		fix: "Check this host's network, proxy (HTTPS_PROXY) and CA bundle, and slack.api_url; the token was not checked."}
}

// checkAgentIDs checks that defaults.agent and the agent of every Slack
// channel (and the workspace) and Matrix room name a known agent: chat
// refuses an unknown one.
func checkAgentIDs(_ context.Context, cfg *configs.Config, set Agents) []finding {
	ids := set.IDs()
	if len(ids) == 0 {
		return nil // the agents check says why the table did not load
	}
	type use struct{ key, id string }
	uses := []use{{"defaults.agent", cfg.Defaults.Agent}}
	if cfg.Slack != nil {
		uses = append(uses, use{"slack.workspace.agent", cfg.Slack.Workspace.Agent})
		for _, ch := range slices.Sorted(maps.Keys(cfg.Slack.Channels)) {
			uses = append(uses, use{"slack.channels." + ch + ".agent", cfg.Slack.Channels[ch].Agent})
		}
	}
	if cfg.Matrix != nil {
		for _, room := range slices.Sorted(maps.Keys(cfg.Matrix.Rooms)) {
			uses = append(uses, use{"matrix.rooms." + room + ".agent", cfg.Matrix.Rooms[room].Agent})
		}
	}
	var out []finding
	for _, u := range uses {
		if u.id == "" || slices.Contains(ids, u.id) {
			continue
		}
		out = append(out, finding{name: u.key, detail: fmt.Sprintf("unknown agent %q; known: %s", u.id, strings.Join(ids, ", ")),
			fix: "Set " + u.key + " to one of the known ids (`threadline agents --all` lists them), or define it under agents."})
	}
	return out
}

// checkMatrix asks the homeserver who the configured token belongs to.
func checkMatrix(ctx context.Context, cfg *configs.Config, _ Agents) []finding {
	m := cfg.Matrix
	if m == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	cli, err := mautrix.NewClient(m.Homeserver, id.UserID(m.UserID), m.AccessToken)
	if err != nil {
		return []finding{{name: "matrix", detail: err.Error(), fix: "Check matrix.homeserver and matrix.user_id."}}
	}
	cli.DefaultHTTPRetries = 0 // one look: an unreachable server is reported, not retried
	unreachable := func(err error) []finding {
		return []finding{{name: "matrix", detail: "unreachable: " + m.Homeserver + ": " + err.Error(),
			fix: "Check matrix.homeserver (the client-server API URL) and this host's network, proxy (HTTPS_PROXY) and CA bundle; the credentials were not checked."}}
	}
	answered := func(err error) []finding {
		return []finding{{name: "matrix", detail: "homeserver answered: " + err.Error(), fix: "Check matrix.homeserver: it must be the client-server API URL."}}
	}
	if m.AccessToken == "" {
		if _, err := cli.Versions(ctx); err != nil {
			if matrixAnswered(err) {
				return answered(err)
			}
			return unreachable(err)
		}
		return []finding{{name: "matrix", ok: true, detail: "homeserver reachable; the password logs in at the first start"}}
	}
	who, err := cli.Whoami(ctx)
	if err != nil {
		if rejected, why := matrixRejected(err); rejected {
			return []finding{{name: "matrix", detail: "rejected: whoami: " + why, fix: "Check matrix.access_token (or use password to log in again)."}}
		}
		if matrixAnswered(err) {
			return answered(err)
		}
		return unreachable(err)
	}
	if string(who.UserID) != m.UserID {
		return []finding{{name: "matrix", detail: fmt.Sprintf("the token belongs to %s, not %s", who.UserID, m.UserID), fix: "Set matrix.user_id to the token's user."}}
	}
	return []finding{{name: "matrix", ok: true, detail: fmt.Sprintf("%s (device %s)", who.UserID, who.DeviceID)}}
}

// signInFinding is f for an installed agent whose detection found no
// sign-in. For the default agent, or one the config sets up, it is a
// failure with the fix, after a second look under the agent user's home when
// isolation is on (where its logins live); for another agent, a note.
func signInFinding(f finding, r registry.Report, cfg *configs.Config, set Agents, def string, iso *procrun.Isolation) finding {
	d, _ := set.Definition(r.ID)
	detail := r.AuthDetail
	if iso != nil {
		state, why := registry.CheckAuth(d, registry.ProbeOptions{Home: iso.Home})
		if state != registry.AuthMissing {
			f.detail = strings.Replace(f.detail, "auth missing", "auth "+string(state)+" (agent user "+iso.User+")", 1)
			return f
		}
		detail = why
	}
	_, configured := cfg.Agents[r.ID]
	if r.ID != def && !configured {
		f.detail += " (not used by this config)"
		return f
	}
	what := "the default agent"
	if r.ID != def {
		what = "set up in agents." + r.ID
	}
	f.ok, f.warn = false, false
	f.detail = fmt.Sprintf("%s, %s, cannot sign in: %s", r.Version, what, detail)
	f.fix = signInFix(d, iso)
	return f
}

// lxdNeeded says why this config needs LXD, or "" when nothing does.
func lxdNeeded(ctx context.Context, cfg *configs.Config) string {
	if cfg.LXD.Remote != "" || cfg.LXD.Image != "" {
		return "lxd is configured"
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if st, err := store.Open(ctx, cfg.Database.URL, slog.New(slog.DiscardHandler)); err == nil {
		// The projects say: only those with a container need LXD (a
		// project without one runs its chats on this host).
		defer st.Close()
		if ps, err := st.ListProjects(ctx); err == nil && len(ps) > 0 {
			n := 0
			for _, p := range ps {
				if p.Container != "" {
					n++
				}
			}
			if n > 0 {
				return fmt.Sprintf("%d project(s) with a container", n)
			}
			return ""
		}
	}
	var bound []configs.ChannelConfig
	if cfg.Slack != nil {
		bound = append(bound, cfg.Slack.Workspace)
		for _, ch := range cfg.Slack.Channels {
			bound = append(bound, ch)
		}
	}
	if cfg.Matrix != nil {
		for _, ch := range cfg.Matrix.Rooms {
			bound = append(bound, ch)
		}
	}
	// No project added yet, or the database cannot say (its check reports
	// why): a channel bound to a project may need it.
	for _, ch := range bound {
		if ch.Project != "" {
			return "a channel is bound to project " + ch.Project
		}
	}
	return ""
}

// SlackRejected reports whether err is Slack's answer refusing the call (an
// error such as invalid_auth, or HTTP 401/403) rather than a failure to
// reach it or Slack's own trouble (internal_error, 5xx, a rate limit), and
// the reason to show: the bot's own rule (slackbot.Refused).
func SlackRejected(err error) (bool, string) { return slackbot.Refused(err) }

// matrixAnswered reports whether err carries an HTTP answer of the server.
func matrixAnswered(err error) bool {
	var he mautrix.HTTPError
	return errors.As(err, &he) && he.Response != nil
}

// matrixRejected reports whether err is the homeserver's answer (a Matrix
// error such as M_UNKNOWN_TOKEN, or an HTTP 401/403) rather than a failure
// to reach it, and the reason to show.
func matrixRejected(err error) (bool, string) {
	var he mautrix.HTTPError
	if !errors.As(err, &he) {
		return false, ""
	}
	if he.RespError != nil {
		return true, he.RespError.ErrCode + ": " + he.RespError.Err
	}
	if he.Response != nil && (he.Response.StatusCode == http.StatusUnauthorized || he.Response.StatusCode == http.StatusForbidden) {
		return true, he.Response.Status
	}
	return false, ""
}

// SignInProblem is the warning for d when its sign-in state is missing
// (registry.CheckAuth, under iso's home when isolation is on), else "".
func SignInProblem(d registry.Definition, iso *procrun.Isolation) string {
	opts := registry.ProbeOptions{}
	if iso != nil {
		opts.Home = iso.Home
	}
	state, detail := registry.CheckAuth(d, opts)
	if state != registry.AuthMissing {
		return ""
	}
	return fmt.Sprintf("threadline: %s cannot sign in (%s).\nthreadline: fix: %s", d.ID, detail, signInFix(d, iso))
}

// signInFix says how to sign d in: export its first credential variable
// before starting threadline (or set it in agents.<id>.env), or sign the
// CLI in as the user the agent runs as.
func signInFix(d registry.Definition, iso *procrun.Isolation) string {
	var ways []string
	if len(d.Auth.Env) > 0 {
		ways = append(ways, fmt.Sprintf("export %s=… before starting threadline (or set it in agents.%s.env)", d.Auth.Env[0], d.ID))
	}
	who := "this user"
	if u, err := user.Current(); err == nil && u.Username != "" {
		who = u.Username
	}
	if iso != nil {
		who = "the agent user " + iso.User + " (host.user)"
	}
	switch {
	case d.Auth.Login == "":
		ways = append(ways, "sign the CLI in as "+who)
	case iso != nil:
		ways = append(ways, fmt.Sprintf("run `%s` as %s: sudo -u %s -H %s", d.Auth.Login, who, iso.User, d.Auth.Login))
	default:
		ways = append(ways, fmt.Sprintf("run `%s` as %s", d.Auth.Login, who))
	}
	return strings.Join(ways, ", or ")
}
