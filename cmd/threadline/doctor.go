// threadline doctor: checks the config, the database, the agent CLIs, the chat
// credentials and LXD, and says how to fix each problem.

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/id"

	"github.com/threadline-bot/threadline/agentcore/redact"
	"github.com/threadline-bot/threadline/agentcore/registry"
	slackbot "github.com/threadline-bot/threadline/bot/slack"
	"github.com/threadline-bot/threadline/store"
)

// finding is the outcome of one check.
type finding struct {
	name string
	ok   bool
	// warn marks a problem that does not stop Threadline from running.
	warn   bool
	detail string
	fix    string
}

// doctorCheck is one check run by doctor.
type doctorCheck func(ctx context.Context, cfg *Config) []finding

// doctorChecks are the checks after the config loaded; front-ends add theirs.
var doctorChecks = []doctorCheck{checkDatabase, checkAgents, checkLXD}

func cmdDoctor(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "config file")
	if err := fs.Parse(args); err != nil {
		return &exitError{2, err}
	}
	cfg, err := loadConfig(*config)
	if err != nil {
		report(stdout, redact.New(), []finding{{name: "config", detail: err.Error(), fix: "Fix the config file; see configs/threadline.example.yaml."}})
		return &exitError{1, errors.New("the config has problems")}
	}
	where := cfg.path
	if where == "" {
		where = "none found: built-in defaults (" + strings.Join(configPaths(), ", ") + ")"
	}
	findings := []finding{{name: "config", ok: true, detail: where}}
	for _, c := range doctorChecks {
		findings = append(findings, c(ctx, cfg)...)
	}
	failed := report(stdout, redact.New(cfg.secrets()...), findings)
	if failed > 0 {
		return &exitError{1, fmt.Errorf("%d problem(s) found", failed)}
	}
	return nil
}

// report prints the findings with secrets redacted and returns the failures.
func report(w io.Writer, r *redact.Redactor, fs []finding) int {
	failed := 0
	for _, f := range fs {
		mark := "ok  "
		switch {
		case !f.ok && f.warn:
			mark = "warn"
		case !f.ok:
			mark, failed = "FAIL", failed+1
		}
		fmt.Fprintf(w, "%s  %-22s %s\n", mark, f.name, r.String(f.detail))
		if !f.ok && f.fix != "" {
			fmt.Fprintf(w, "      %-22s fix: %s\n", "", r.String(f.fix))
		}
	}
	return failed
}

func checkDatabase(ctx context.Context, cfg *Config) []finding {
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

func checkAgents(ctx context.Context, cfg *Config) []finding {
	log := slog.New(slog.DiscardHandler)
	set, err := loadAgents(cfg, log)
	if err != nil {
		return []finding{{name: "agents", detail: err.Error(), fix: "Fix the agents section of the config."}}
	}
	var out []finding
	var missing []string
	installed := 0
	for _, r := range set.probe(ctx, log) {
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
		out = append(out, f)
	}
	if installed == 0 {
		out = append(out, finding{name: "agents", detail: "no agent CLI is installed", fix: "Install at least one, e.g. npm install -g @anthropic-ai/claude-code (`threadline agents --all` lists them)"})
	} else if len(missing) > 0 {
		out = append(out, finding{name: "other agents", ok: true, detail: "not installed: " + strings.Join(missing, ", ")})
	}
	return out
}

func checkLXD(ctx context.Context, cfg *Config) []finding {
	if cfg.LXD.Remote == "" && cfg.LXD.Image == "" {
		if _, err := exec.LookPath("lxc"); err != nil {
			return []finding{{name: "lxd", ok: true, detail: "not configured (project chats need it)"}}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	target := "local:"
	if cfg.LXD.Remote != "" {
		target = cfg.LXD.Remote + ":"
	}
	out, err := exec.CommandContext(ctx, "lxc", "list", target, "--format", "csv", "-c", "n").CombinedOutput()
	if err != nil {
		return []finding{{name: "lxd", detail: fmt.Sprintf("lxc list %s: %v: %s", target, err, strings.TrimSpace(string(out))),
			fix: "Start the LXD daemon (lxd init if it was never set up) and make sure this user may use it."}}
	}
	n := len(strings.Fields(string(out)))
	return []finding{{name: "lxd", ok: true, detail: fmt.Sprintf("%s reachable, %d instance(s)", target, n)}}
}

func init() { doctorChecks = append(doctorChecks, checkSlack, checkMatrix) }

// checkSlack calls auth.test with the bot token.
func checkSlack(ctx context.Context, cfg *Config) []finding {
	if cfg.Slack == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	apiURL := cfg.Slack.APIURL
	if apiURL == "" {
		apiURL = slackbot.DefaultAPIURL
	}
	res, err := slack.New(cfg.Slack.BotToken, slack.OptionAPIURL(apiURL)).AuthTestContext(ctx)
	if err != nil {
		return []finding{{name: "slack", detail: "auth.test: " + err.Error(),
			fix: "Check slack.bot_token (xoxb-..., from the app's OAuth page after installing it) and that the app is installed in the workspace."}}
	}
	return []finding{{name: "slack", ok: true, detail: fmt.Sprintf("team %s (%s) as %s", res.Team, res.TeamID, res.User)}}
}

// checkMatrix asks the homeserver who the configured token belongs to.
func checkMatrix(ctx context.Context, cfg *Config) []finding {
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
	if m.AccessToken == "" {
		if _, err := cli.Versions(ctx); err != nil {
			return []finding{{name: "matrix", detail: "homeserver: " + err.Error(), fix: "Check matrix.homeserver: it must be the client-server API URL."}}
		}
		return []finding{{name: "matrix", ok: true, detail: "homeserver reachable; the password logs in at the first start"}}
	}
	who, err := cli.Whoami(ctx)
	if err != nil {
		return []finding{{name: "matrix", detail: "whoami: " + err.Error(), fix: "Check matrix.access_token (or use password to log in again)."}}
	}
	if string(who.UserID) != m.UserID {
		return []finding{{name: "matrix", detail: fmt.Sprintf("the token belongs to %s, not %s", who.UserID, m.UserID), fix: "Set matrix.user_id to the token's user."}}
	}
	return []finding{{name: "matrix", ok: true, detail: fmt.Sprintf("%s (device %s)", who.UserID, who.DeviceID)}}
}
