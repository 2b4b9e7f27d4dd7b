package procrun

import (
	"strings"
	"testing"
)

// TestProviderLogger shows that a provider's logger carries the agent key
// once (a caller's logger does not carry it: cmd/threadline passes its own
// unkeyed) and that a nil logger discards.
func TestProviderLogger(t *testing.T) {
	logger, buf := testLogger(t)
	ProviderLogger(logger, "claude").With("run_id", "r1").Info("line")
	if got := buf.String(); strings.Count(got, "agent=") != 1 || !strings.Contains(got, "agent=claude") || strings.Contains(got, "provider=") {
		t.Errorf("log line = %q, want agent=claude once", got)
	}
	ProviderLogger(nil, "claude").Info("discarded")
}
