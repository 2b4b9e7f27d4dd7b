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

	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/chatops/redact"
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
