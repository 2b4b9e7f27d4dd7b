package providertest

import (
	"strings"
	"testing"
)

// TestCheckOrdinary: the output of the tests run as an ordinary user passes
// only when some test passed, none failed or skipped, and every run of
// theirs (at least one) was sandboxed as that user.
func TestCheckOrdinary(t *testing.T) {
	const (
		run   = "    x_test.go:1: sandboxed run as uid 995 (this process's user): cwd /tmp/a, TMPDIR /tmp/b, own port 1"
		pass  = "--- PASS: TestE2EText (1.00s)"
		other = "    x_test.go:1: sandboxed run as threadline-agent (uid 999): cwd /tmp/a, TMPDIR /tmp/b, own port 1"
	)
	for _, c := range []struct {
		lines []string
		want  string // "" passes, else in the error
	}{
		{[]string{"=== RUN   TestE2EText", run, pass, "PASS"}, ""},
		{[]string{run, "    --- PASS: TestE2E/a (1.00s)", pass}, ""},
		{[]string{pass}, "0 sandboxed runs"},
		{[]string{run}, "0 tests passed"},
		{[]string{run, "--- SKIP: TestE2EText (0.00s)"}, "TestE2EText SKIP"},
		{[]string{run, pass, "--- FAIL: TestE2EOther (0.00s)"}, "TestE2EOther FAIL"},
		{[]string{run, other, pass}, "a run sandboxed as threadline-agent (uid 999)"},
	} {
		err := checkOrdinary(c.lines, 995)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%q: %v, want %q", c.lines, err, c.want)
		}
	}
}
