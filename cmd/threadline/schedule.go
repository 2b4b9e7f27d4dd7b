// threadline schedule: prompts run on a cron schedule, each firing in a new
// thread of its channel (chatops/schedules); and serve's scheduler.

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/threadline-bot/threadline/chatops/schedules"
	"github.com/threadline-bot/threadline/store"
)

const scheduleUsage = `Usage:
  threadline schedule add NAME --cron "0 9 * * 1-5" [--tz Europe/Berlin] --channel C
                          [--workspace W] [--project P] [--agent A] [--catchup skip|once] [--config F] "prompt"
  threadline schedule list [--json] [--config F]
  threadline schedule remove NAME [--config F]
  threadline schedule run NAME [--config F]

At each occurrence of the cron expression (minute hour day-of-month month
day-of-week, or @hourly, @daily, @weekly...; read in --tz, default UTC) a
running 'threadline serve' starts a new thread in the channel (a Slack channel
id, or a Matrix room id "!...") with the prompt, in a new chat of the
channel's defaults (--agent and --project override them). Exactly one replica
fires each occurrence. A firing while the schedule's previous one still runs
is skipped and noted in the channel. Occurrences missed while no replica ran
are skipped (--catchup skip) or the latest of them runs once at start
(--catchup once). --workspace is the Slack team id (T...) or the Matrix server
name of the channel; when omitted, the Matrix bot's server, or the workspace
of the channel's latest thread. 'schedule run' fires the schedule once now
(through a running serve, within its poll interval).
`

// cmdSchedule is `threadline schedule`.
func cmdSchedule(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, scheduleUsage)
		return &exitError{2, errors.New("schedule: missing subcommand (add, list, remove, run)")}
	}
	sub := args[0]
	fs := newFlagSet("schedule "+sub, stdout, stderr, scheduleUsage)
	config := fs.String("config", "", "config file")
	var run func(st *store.Store, pos []string) error
	var want []string
	switch sub {
	case "add":
		cronExpr := fs.String("cron", "", `cron expression, e.g. "0 9 * * 1-5" (required)`)
		tz := fs.String("tz", "", "time zone the expression is read in, e.g. Europe/Berlin (default UTC)")
		channel := fs.String("channel", "", "Slack channel id or Matrix room id the threads start in (required)")
		workspace := fs.String("workspace", "", "Slack team id or Matrix server name of the channel")
		project := fs.String("project", "", "project of the new chats (default: the channel's)")
		agentID := fs.String("agent", "", "agent of the new chats (default: the channel's)")
		catchup := fs.String("catchup", store.CatchupSkip, "missed occurrences: skip, or once (the latest runs at start)")
		pos, err := parseArgs(fs, args[1:])
		if err != nil {
			return err
		}
		if len(pos) < 2 {
			return &exitError{2, errors.New("schedule add: want NAME and the prompt (see threadline schedule add --help)")}
		}
		sc := store.Schedule{Name: pos[0], Cron: strings.TrimSpace(*cronExpr), TZ: *tz, Channel: *channel, Workspace: *workspace,
			Project: *project, Agent: *agentID, Catchup: *catchup, Prompt: strings.TrimSpace(strings.Join(pos[1:], " ")), CreatedBy: cliUser()}
		if err := checkSchedule(sc); err != nil {
			return &exitError{2, fmt.Errorf("schedule add: %w", err)}
		}
		sc.Platform = "slack"
		if strings.HasPrefix(sc.Channel, "!") {
			sc.Platform = "matrix"
		}
		cfg, st, err := openStore(ctx, *config, stderr)
		if err != nil {
			return err
		}
		defer st.Close()
		if sc.Workspace == "" && sc.Platform == "matrix" {
			if _, server, ok := strings.Cut(cfg.Matrix.UserID, ":"); ok {
				sc.Workspace = server
			}
		}
		if err := st.AddSchedule(ctx, sc); err != nil {
			if errors.Is(err, store.ErrConflict) {
				return fmt.Errorf("schedule add: there is already a schedule %s (remove it first)", sc.Name)
			}
			return err
		}
		next, _ := schedules.Next(sc, time.Now())
		fmt.Fprintf(stdout, "Added schedule %s; next run %s.\n", sc.Name, showTime(next, sc.TZ))
		return nil
	case "list", "ls":
		asJSON := fs.Bool("json", false, "print JSON")
		run = func(st *store.Store, _ []string) error { return listSchedules(ctx, st, stdout, *asJSON) }
	case "remove", "rm":
		want = []string{"NAME"}
		run = func(st *store.Store, pos []string) error {
			if err := st.RemoveSchedule(ctx, pos[0]); err != nil {
				if errors.Is(err, store.ErrNotFound) {
					return fmt.Errorf("schedule remove: there is no schedule %s", pos[0])
				}
				return err
			}
			fmt.Fprintf(stdout, "Removed schedule %s.\n", pos[0])
			return nil
		}
	case "run":
		want = []string{"NAME"}
		run = func(st *store.Store, pos []string) error {
			if err := st.RequestScheduleRun(ctx, pos[0], time.Now(), cliUser()); err != nil {
				if errors.Is(err, store.ErrNotFound) {
					return fmt.Errorf("schedule run: there is no schedule %s", pos[0])
				}
				return err
			}
			fmt.Fprintf(stdout, "Schedule %s runs now (a running serve starts its thread).\n", pos[0])
			return nil
		}
	case "help", "-h", "--help":
		fmt.Fprint(stdout, scheduleUsage)
		return nil
	default:
		fmt.Fprint(stderr, scheduleUsage)
		return &exitError{2, fmt.Errorf("schedule: unknown subcommand %q", sub)}
	}
	pos, err := parseExactly(fs, args[1:], want...)
	if err != nil {
		return err
	}
	_, st, err := openStore(ctx, *config, stderr)
	if err != nil {
		return err
	}
	defer st.Close()
	return run(st, pos)
}

// checkSchedule checks what schedule add was given, before the database.
func checkSchedule(sc store.Schedule) error {
	switch {
	case sc.Cron == "":
		return errors.New("--cron is required")
	case sc.Channel == "":
		return errors.New("--channel is required")
	case sc.Prompt == "":
		return errors.New("the prompt is empty")
	case sc.Catchup != store.CatchupSkip && sc.Catchup != store.CatchupOnce:
		return fmt.Errorf("--catchup %q: want skip or once", sc.Catchup)
	}
	_, _, err := schedules.Parse(sc.Cron, sc.TZ)
	return err
}

// listSchedules prints the schedules with their next run and last firing.
func listSchedules(ctx context.Context, st *store.Store, stdout io.Writer, asJSON bool) error {
	list, err := st.Schedules(ctx)
	if err != nil {
		return err
	}
	type entry struct {
		store.Schedule
		Next time.Time             `json:"next,omitzero"`
		Last *store.ScheduleFiring `json:"last,omitempty"`
	}
	entries := make([]entry, len(list))
	for i, sc := range list {
		entries[i].Schedule = sc
		entries[i].Next, _ = schedules.Next(sc, time.Now())
		fs, err := st.ScheduleFirings(ctx, sc.Name, 1)
		if err != nil {
			return err
		}
		if len(fs) > 0 {
			entries[i].Last = &fs[0]
		}
	}
	if asJSON {
		return json.NewEncoder(stdout).Encode(entries)
	}
	if len(entries) == 0 {
		fmt.Fprintln(stdout, "No schedules. Add one with: threadline schedule add NAME --cron EXPR --channel C \"prompt\"")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tCRON\tCHANNEL\tNEXT\tLAST\tPROMPT")
	for _, e := range entries {
		last := "-"
		if e.Last != nil {
			last = showTime(e.Last.Occurrence, e.TZ) + " " + e.Last.State
		}
		tz := ""
		if e.TZ != "" {
			tz = " (" + e.TZ + ")"
		}
		fmt.Fprintf(tw, "%s\t%s%s\t%s:%s\t%s\t%s\t%s\n", e.Name, e.Cron, tz, e.Platform, e.Channel, showTime(e.Next, e.TZ), last, clip(e.Prompt, 40))
	}
	return tw.Flush()
}

// showTime renders t in the zone tz ("-" for zero).
func showTime(t time.Time, tz string) string {
	if t.IsZero() {
		return "-"
	}
	if loc, err := time.LoadLocation(tz); err == nil {
		t = t.In(loc)
	}
	return t.Format("2006-01-02 15:04 MST")
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// cliUser names who used the command line ("cli:" and the login name).
func cliUser() string {
	if u := os.Getenv("USER"); u != "" {
		return "cli:" + u
	}
	return "cli"
}

// scheduleInterval is how often serve reads the schedules (tests shorten it).
var scheduleInterval = 15 * time.Second

// runSchedules fires the schedules until ctx ends (serve): one scheduler per
// replica, the database deciding which replica fires each occurrence.
func runSchedules(ctx context.Context, a *app, log *slog.Logger) {
	if a.threads == nil {
		return
	}
	schedules.New(a.store, a.threads, schedules.Options{Owner: a.owner, Interval: scheduleInterval}, log).Run(ctx)
}
