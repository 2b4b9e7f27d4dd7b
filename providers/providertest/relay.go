// Relays for the providers' unit tests: the test binary itself runs as the
// relay a run survives a restart of the bot through (procrun.Relay).

package providertest

import (
	"context"
	"log/slog"
	"os"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/procrun"
)

// RelayEnv set to "1" makes a test binary whose TestMain calls
// RunRelayIfAsked (Main does) act as a relay.
const RelayEnv = "THREADLINE_PROVIDERTEST_RELAY"

// RunRelayIfAsked, called first in TestMain, runs the relay and exits when
// the test binary was started as one (by a Relay's run); otherwise it
// returns at once.
func RunRelayIfAsked() {
	if os.Getenv(RelayEnv) != "1" {
		return
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := procrun.RunRelay(context.Background(), os.Args[2:], os.Stdin, os.Stdout, logger); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// Relay returns a relay run by this test binary (its TestMain calls
// RunRelayIfAsked, as Main does), in a short directory: the socket path must fit in 108
// bytes.
func Relay(t testing.TB) procrun.Relay {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "tlp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return procrun.Relay{Dir: dir, Command: []string{exe, "relay"}, Env: []string{RelayEnv + "=1"}}
}
