// A relayed run: detaching (what `serve` does at shutdown) leaves the CLI
// and its tools running; nothing is killed by the process group kill or the
// token sweep.

package jsonstream

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/providers/providertest"
)

func TestMain(m *testing.M) { providertest.Main(m) }

// TestRelayedRunDetachKeepsItRunning: a relayed opencode run is detached
// while it works; Run returns, and the CLI goes on to finish on its own.
func TestRelayedRunDetachKeepsItRunning(t *testing.T) {
	bin, dir := fakeCLI(t, "", `echo '{"type":"step_start","sessionID":"ses_relay","part":{}}'
while [ ! -e "$DIR/go" ]; do sleep 0.02; done
echo '{"type":"step_finish","sessionID":"ses_relay","part":{"reason":"stop"}}'
echo done > "$DIR/finished"`)
	rr := providertest.Relay(t).Run("run-detach")
	p := newTestProvider(t, OpenCode, bin)
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- p.Run(procrun.WithRelay(t.Context(), rr), agent.RunRequest{Prompt: "p", RunID: "run-detach"}, func(ev agent.Event) {
			if ev.Type == agent.EventSessionUpdated {
				close(started)
			}
		})
	}()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("Run ended before the detach: %v", err)
	}
	if !rr.Relayed() || !rr.Detach() {
		t.Fatal("the run was not relayed, or Detach found no process")
	}
	t.Logf("Run after the detach: %v", <-done)
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if !providertest.WaitFile(filepath.Join(dir, "finished"), nil) {
		t.Fatal("the detached CLI did not finish: it was killed when the run detached")
	}
}
