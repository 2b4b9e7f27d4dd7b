// Plain runs on procrun.Session: relayed (detach, reattach, replay) and
// isolated (the CLI runs as the agent user), with the test binary as relay.

package plain

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/agentcore/procrun/procruntest"
	"github.com/threadline-bot/threadline/providers/providertest"
)

func TestMain(m *testing.M) { providertest.Main(m) }

// recorder collects a run's events.
type recorder = providertest.Events

// testRelay is a relay run by this test binary.
func testRelay(t *testing.T) procrun.Relay { return providertest.Relay(t) }

// waitFor polls cond until it holds or a generous deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRelayedRunSurvivesDetach runs a plain CLI under a relay, detaches
// while it works (what `serve` does at shutdown), lets it finish alone, then
// reattaches as a restarted bot would: the reattached run re-emits exactly
// the deltas the first one emitted (cut at line ends, not at reads) and
// completes.
func TestRelayedRunSurvivesDetach(t *testing.T) {
	bin, dir := fake(t, `printf '# Title\n\nfirst part'
printf ' of a line\n'
while [ ! -e "$(dirname "$0")/go" ]; do sleep 0.02; done
printf 'after the restart\n\n~~~\ncode\n~~~\n'
echo done > "$(dirname "$0")/finished"`)
	relay := testRelay(t)
	p := provider(t, Grok, bin, dir, nil)

	rr := relay.Run("run-1")
	var first recorder
	done := make(chan error, 1)
	go func() {
		done <- p.Run(procrun.WithRelay(t.Context(), rr), agent.RunRequest{Prompt: "p", RunID: "run-1"}, first.Emit)
	}()
	waitFor(t, "the first lines", func() bool {
		text, _ := deltas(first.All())
		return strings.Contains(text, "of a line\n")
	})
	if !rr.Relayed() {
		t.Fatal("the plain CLI did not run under the relay")
	}
	if !rr.Detach() {
		t.Fatal("Detach found no relayed process")
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after the detach")
	}
	// The agent runs on without anyone following it.
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the detached CLI to finish", func() bool {
		_, err := os.Stat(filepath.Join(dir, "finished"))
		return err == nil
	})

	var second recorder
	if err := p.Run(procrun.WithRelay(t.Context(), relay.Reattach("run-1")), agent.RunRequest{Prompt: "p", RunID: "run-1"}, second.Emit); err != nil {
		t.Fatalf("reattached Run: %v", err)
	}
	evs := second.All()
	want := []string{"# Title\n", "\n", "first part of a line\n", "after the restart\n", "\n", "~~~\n", "code\n", "~~~\n"}
	var got []string
	for _, ev := range evs {
		if ev.Type == agent.EventAssistantDelta {
			got = append(got, ev.Text)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("reattached deltas = %q\nwant %q", got, want)
	}
	if evs[len(evs)-1].Type != agent.EventRunCompleted {
		t.Errorf("reattached run ended %v", providertest.Types(evs))
	}
	var live []string
	for _, ev := range first.All() {
		if ev.Type == agent.EventAssistantDelta {
			live = append(live, ev.Text)
		}
	}
	if len(live) < 3 || !slices.Equal(live[:3], want[:3]) {
		t.Errorf("live deltas before the detach = %q, want %q first: the replay would not match what was recorded", live, want[:3])
	}
	if b, err := os.ReadFile(filepath.Join(dir, "args")); err != nil || !strings.Contains(string(b), "p") {
		t.Errorf("args %q, %v", b, err)
	}
}

// TestRelayedRunCancel interrupts a relayed plain run: SIGINT through the
// relay, run.interrupted.
func TestRelayedRunCancel(t *testing.T) {
	bin, dir := fake(t, `trap 'echo stopping; exit 130' INT; echo working; while :; do sleep 0.05; done`)
	ctx, cancel := context.WithCancel(procrun.WithRelay(t.Context(), testRelay(t).Run("run-c")))
	var rec recorder
	err := provider(t, Aider, bin, dir, nil).Run(ctx, agent.RunRequest{Prompt: "p"}, func(ev agent.Event) {
		rec.Emit(ev)
		if ev.Type == agent.EventAssistantDelta {
			cancel()
		}
	})
	if err != nil {
		t.Fatalf("cancelled Run returned %v", err)
	}
	got := providertest.Types(rec.All())
	if got[len(got)-1] != agent.EventRunInterrupted || slices.Contains(got, agent.EventRunCompleted) {
		t.Fatalf("events = %v", got)
	}
}

const agentUserName = procruntest.AgentUser

// agentIsolation returns the agent user's isolation, creating the user when
// missing (see procruntest.NeedAgentUser).
func agentIsolation(t *testing.T) *procrun.Isolation {
	t.Helper()
	procruntest.NeedAgentUser(t)
	iso, err := procrun.NewIsolation(agentUserName)
	if err != nil {
		t.Fatal(err)
	}
	return iso
}

// TestIsolatedRunAsAgentUser runs AtomCode (prompt in a private file) under
// the context's isolation, directly and relayed: the CLI reads its prompt
// file and reports, from the kernel's /proc/self/status, the agent user's
// uid and gid and no capability.
func TestIsolatedRunAsAgentUser(t *testing.T) {
	iso := agentIsolation(t)
	for _, relayed := range []bool{false, true} {
		t.Run("relayed="+strconv.FormatBool(relayed), func(t *testing.T) {
			dir := procruntest.TraversableDir(t, "tlpiso")
			bin := filepath.Join(dir, "atomcode")
			script := "#!/bin/sh\ncat \"$2\"; echo\ngrep -E '^(Uid|Gid|CapPrm|CapEff|CapAmb):' /proc/self/status\nid -u\n"
			if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			p, err := New(nil, Options{Launch: procrun.Launch{Bin: bin, HostEnv: func() []string { return []string{"PATH=/usr/bin:/bin"} }}, CLI: AtomCode, TempDir: dir})
			if err != nil {
				t.Fatal(err)
			}
			ctx := procrun.WithIsolation(t.Context(), iso)
			rr := testRelay(t).Run("iso")
			if relayed {
				ctx = procrun.WithRelay(ctx, rr)
			}
			var rec recorder
			if err := p.Run(ctx, agent.RunRequest{Prompt: "the private prompt", Cwd: dir}, rec.Emit); err != nil {
				t.Fatalf("Run: %v (events %+v)", err, rec.All())
			}
			if relayed != rr.Relayed() {
				t.Errorf("relayed = %v, want %v", rr.Relayed(), relayed)
			}
			text, _ := deltas(rec.All())
			uid, gid := strconv.Itoa(int(iso.UID)), strconv.Itoa(int(iso.GID))
			st := map[string]string{}
			for _, line := range strings.Split(text, "\n") {
				if k, v, ok := strings.Cut(line, ":"); ok {
					st[k] = strings.Join(strings.Fields(v), " ")
				}
			}
			if !strings.HasPrefix(text, "the private prompt\n") {
				t.Errorf("the isolated CLI did not read its prompt file: %q", text)
			}
			if want := strings.Join([]string{uid, uid, uid, uid}, " "); st["Uid"] != want {
				t.Errorf("Uid = %q, want %q (output %q)", st["Uid"], want, text)
			}
			if want := strings.Join([]string{gid, gid, gid, gid}, " "); st["Gid"] != want {
				t.Errorf("Gid = %q, want %q", st["Gid"], want)
			}
			for _, k := range []string{"CapPrm", "CapEff", "CapAmb"} {
				if st[k] != "0000000000000000" {
					t.Errorf("%s = %q, want no capability", k, st[k])
				}
			}
			if !strings.Contains(text, "\n"+uid+"\n") {
				t.Errorf("id -u did not print %s: %q", uid, text)
			}
		})
	}
}

// TestIsolatedRunRefusesWritableCLI: an executable the agent user could
// change is refused before anything runs.
func TestIsolatedRunRefusesWritableCLI(t *testing.T) {
	iso := agentIsolation(t)
	dir := procruntest.TraversableDir(t, "tlpiso")
	bin := filepath.Join(dir, "grok")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(bin, int(iso.UID), int(iso.GID)); err != nil {
		t.Fatal(err)
	}
	p, _ := New(nil, Options{Launch: procrun.Launch{Bin: bin, HostEnv: func() []string { return []string{"PATH=/usr/bin:/bin"} }}, CLI: Grok})
	var rec recorder
	err := p.Run(procrun.WithIsolation(t.Context(), iso), agent.RunRequest{Prompt: "p"}, rec.Emit)
	if !errors.Is(err, procrun.ErrWritableExecutable) || len(rec.All()) != 0 {
		t.Fatalf("err %v, events %+v", err, rec.All())
	}
}
