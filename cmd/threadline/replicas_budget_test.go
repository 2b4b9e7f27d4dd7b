// Scale-out keeps the budget (issue 19, target 7): replicas over one
// Postgres share each workspace's chat-API budget.

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/configs"
	"github.com/threadline-bot/threadline/providers/providertest"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// Shape of the test: budgetReplicas serve replicas, budgetRuns streaming runs
// on each, all in one workspace.
const (
	budgetReplicas = 3
	budgetRuns     = 20
	// budget429s is the most 429s the shared budget may meet in all: its
	// buckets refill at 95 % of the fake's rate by the database's clock, so
	// only a call that spends longer on its way to the fake than the next
	// one (a loaded machine) can find the fake's bucket short; each 429
	// pauses all replicas for its Retry-After (≥ 1 s), which refills every
	// bucket. Without sharing, three replicas spend three budgets.
	budget429s = 5
)

// slackTiers are the fake's per-workspace limits, Slack's documented tiers
// where there is one (FACTS.md: chat.update and chat.delete Tier 3,
// chat.appendStream Tier 4, chat.stopStream Tier 2); chat.postMessage is
// about 1/s, and chat.startStream (no documented tier) and
// assistant.threads.setStatus ("special") get the outbox's own budget of
// their kind.
var slackTiers = map[string]slacktest.Rate{
	"chat.postMessage":            {PerMinute: 60, Burst: 5},
	"chat.startStream":            {PerMinute: 60, Burst: 5},
	"chat.update":                 slacktest.Tier3,
	"chat.delete":                 slacktest.Tier3,
	"chat.appendStream":           slacktest.Tier4,
	"chat.stopStream":             slacktest.Tier2,
	"assistant.threads.setStatus": {PerMinute: 100, Burst: 10},
}

// TestReplicasShareSlackBudget: three `serve` replicas (openApp + the Slack
// front-end + serve, as cmdServe wires them, each its own replica name and
// database pool) over one Postgres schema and one fake Slack workspace
// enforcing slackTiers. The fake hands each mention to one replica in turn,
// so each replica runs 20 of the 60 streaming runs (the Go fake CLI: 120
// deltas, 25 ms apart). With the shared budget (the default on Postgres)
// the 60 answers end byte-exact with at most budget429s 429s; with each
// replica on its own buckets (ownBudget) the same load meets a 429 storm,
// which the test measures and requires, so that the bound above means
// something. Both runs' figures are logged.
func TestReplicasShareSlackBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("60 runs against Slack's tiers take minutes")
	}
	var figures []string
	for _, tc := range []struct {
		name   string
		shared bool
	}{{"shared", true}, {"own buckets", false}} {
		t.Run(tc.name, func(t *testing.T) {
			got := budgetRun(t, tc.shared)
			figures = append(figures, fmt.Sprintf("%s: %s", tc.name, got.String()))
			switch {
			case tc.shared && got.limited > budget429s:
				t.Errorf("shared budget: %d 429s, want at most %d", got.limited, budget429s)
			case !tc.shared && got.limited <= 4*budget429s:
				t.Errorf("own buckets: only %d 429s; the test no longer shows the storm the shared budget prevents", got.limited)
			}
		})
	}
	t.Logf("3 replicas × 20 streaming runs, one workspace:\n%s", strings.Join(figures, "\n"))
}

// budgetFigures is what one run of the load measured.
type budgetFigures struct {
	calls, limited int
	byMethod       map[string][2]int // calls, 429s
	sharedWaits    int
	sharedFailures int // questions to the shared limiter that failed or did not answer in time
	sharedSkips    int // calls that went without the shared limiter (breaker open)
	took           time.Duration
}

func (f budgetFigures) String() string {
	var ms []string
	for m, n := range f.byMethod {
		ms = append(ms, fmt.Sprintf("%s %d/%d", m, n[1], n[0]))
	}
	sort.Strings(ms)
	return fmt.Sprintf("%d calls, %d 429s, %d shared-limiter waits, %d failed or late, %d calls without it, all answers in %s (429s/calls: %s)",
		f.calls, f.limited, f.sharedWaits, f.sharedFailures, f.sharedSkips, f.took.Round(100*time.Millisecond), strings.Join(ms, ", "))
}

func budgetRun(t *testing.T, shared bool) budgetFigures {
	dir := isolate(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	fake := slacktest.New(t)
	fake.Spread = true
	for m, r := range slackTiers {
		fake.SetLimit(m, r)
	}
	db := storetest.URL(t, store.DialectPostgres)
	ctx, cancel := context.WithCancel(context.Background())
	var logs lockedBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))

	apps := make([]*app, budgetReplicas)
	done := make([]chan error, budgetReplicas)
	for i := range apps {
		rdir := filepath.Join(dir, "replica"+strconv.Itoa(i))
		if err := os.MkdirAll(filepath.Join(rdir, "work"), 0o755); err != nil {
			t.Fatal(err)
		}
		path := slackConfigFile(t, fake, rdir, "", map[string]any{"listen": freePort(t)}, map[string]any{
			"database": map[string]any{"url": db},
			"workdir":  filepath.Join(rdir, "work"),
			"agents":   map[string]any{"claude": map[string]any{"bin": exe, "env": map[string]string{testRoleEnv: "fakeclaude"}}},
			"slack": map[string]any{"app_token": slacktest.AppToken, "bot_token": slacktest.BotToken, "api_url": fake.APIURL(),
				"channels": map[string]any{"C1": map[string]any{"agent": "claude", "allow": []string{"UDEV"}}}},
		})
		cfg, err := configs.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		owner := "replica-" + strconv.Itoa(i)
		a, err := openApp(ctx, cfg, log.With("replica", owner), agent.ApprovalAsk, func(o *appOptions) {
			o.replica = replicaOptions{owner: owner, ownBudget: !shared}
		})
		if err != nil {
			t.Fatal(err)
		}
		if a.router == nil {
			t.Fatal("no router on Postgres")
		}
		front, err := buildSlack(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		apps[i], done[i] = a, make(chan error, 1)
		go func() { done[i] <- serve(ctx, a, []frontEnd{front}) }()
		// Connected in replica order: the fake's turn i goes to replica i.
		for deadline := time.Now().Add(providertest.Scale(20 * time.Second)); fake.Connected() < i+1; {
			if time.Now().After(deadline) {
				t.Fatalf("replica %d not connected\n%s", i, logs.String())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	t.Cleanup(func() {
		cancel()
		for i, d := range done {
			if err := <-d; err != nil {
				t.Errorf("replica %d: %v", i, err)
			}
		}
	})

	const runs = budgetReplicas * budgetRuns
	roots := make([]string, runs)
	for i := range roots {
		roots[i] = fake.PostUserMessage("C1", "", "stream "+strconv.Itoa(i))
	}
	start := time.Now()
	mentionStreams(t, fake, roots)
	// The answer of a run: its message whose stream ended with the footer.
	answerOf := func(root string) (slacktest.Message, bool) {
		for _, m := range fake.Thread("C1", root) {
			if strings.Contains(string(m.Blocks), "Done in") {
				return m, true
			}
		}
		return slacktest.Message{}, false
	}
	deadline := time.Now().Add(providertest.Scale(8 * time.Minute))
	for pending := roots; len(pending) > 0; {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d answers not done after %s\n%s", len(pending), runs, time.Since(start), tail(logs.String(), 8192))
		}
		var still []string
		for _, root := range pending {
			if _, ok := answerOf(root); !ok {
				still = append(still, root)
			}
		}
		pending = still
		time.Sleep(100 * time.Millisecond)
	}
	f := budgetFigures{took: time.Since(start), byMethod: map[string][2]int{}}

	// Each replica ran its share of the runs.
	var owners []struct {
		Owner string `db:"owner"`
		N     int    `db:"n"`
	}
	if err := apps[0].store.DB().SelectContext(ctx, &owners, `SELECT owner, count(*) AS n FROM runs GROUP BY owner ORDER BY owner`); err != nil {
		t.Fatal(err)
	}
	if len(owners) != budgetReplicas {
		t.Errorf("runs by owner: %+v, want %d on each of %d replicas", owners, budgetRuns, budgetReplicas)
	}
	for _, o := range owners {
		if o.N != budgetRuns {
			t.Errorf("runs by owner: %+v, want %d on each of %d replicas", owners, budgetRuns, budgetReplicas)
			break
		}
	}

	// Every answer byte-exact: the deltas, in order, nothing else.
	var want strings.Builder
	for i := 1; i <= fakeChunks; i++ {
		fmt.Fprintf(&want, "chunk %d ", i)
	}
	for i, root := range roots {
		m, _ := answerOf(root)
		if got := answerBody(t, m); got != want.String() {
			t.Errorf("answer %d (replica %d) is not the %d deltas:\n got %q\nwant %q", i, i%budgetReplicas, fakeChunks, got, want.String())
		}
	}

	for _, c := range fake.Calls("") {
		n := f.byMethod[c.Method]
		n[0]++
		f.calls++
		if c.Status == 429 {
			n[1]++
			f.limited++
		}
		f.byMethod[c.Method] = n
	}
	for _, a := range apps {
		st := a.desk().Stats("slack", slacktest.TeamID)
		f.sharedWaits += st.SharedWaits
		f.sharedFailures += st.SharedFailures
		f.sharedSkips += st.SharedSkips
	}
	t.Logf("%s", f.String())
	return f
}

// answerBody is the answer text a message shows: its body block (a posted
// or edited message, or a stream stopped with blocks), else what was
// streamed into it.
func answerBody(t *testing.T, m slacktest.Message) string {
	t.Helper()
	var blocks []struct {
		BlockID string          `json:"block_id"`
		Text    json.RawMessage `json:"text"`
	}
	if len(m.Blocks) > 0 {
		if err := json.Unmarshal(m.Blocks, &blocks); err != nil {
			t.Fatalf("blocks of %s: %v", m.TS, err)
		}
	}
	for _, b := range blocks {
		if b.BlockID == "tl_body" {
			var s string
			if err := json.Unmarshal(b.Text, &s); err != nil {
				t.Fatalf("body block of %s: %v", m.TS, err)
			}
			return s
		}
	}
	return m.Markdown
}
