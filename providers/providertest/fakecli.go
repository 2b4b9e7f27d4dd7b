// Fake CLIs for the providers' unit tests: a shell script that records how
// it was started and what it read, and the launch a provider runs it with.

package providertest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/procrun"
)

// FakeCLI writes an executable shell script called name into a fresh
// temporary directory dir. It records its arguments, one a line, in
// dir/args, then runs body, in which $DIR is dir (e.g. `cat > "$DIR/stdin"`
// keeps stdin, `cat "$DIR/../fixture.jsonl"` prints a fixture).
func FakeCLI(t testing.TB, name, body string) (bin, dir string) {
	t.Helper()
	dir = t.TempDir()
	bin = filepath.Join(dir, name)
	script := "#!/bin/sh\nDIR='" + dir + "'\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > \"$DIR/args\"\n" + body + "\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, dir
}

// Testdata returns the absolute path of testdata/name in the package under
// test (for a fake CLI, which runs elsewhere).
func Testdata(t testing.TB, name string) string {
	t.Helper()
	abs, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// PrintFixture returns the shell line of a FakeCLI body that prints the
// fixture testdata/name of the package under test.
func PrintFixture(t testing.TB, name string) string {
	t.Helper()
	return `cat "` + Testdata(t, name) + `"`
}

// RecordStdin is the shell line of a FakeCLI body that keeps its stdin in
// $DIR/stdin (see FakeStdin).
const RecordStdin = `cat > "$DIR/stdin"`

// FakeStdin returns what a FakeCLI in dir kept of its stdin (RecordStdin).
func FakeStdin(t testing.TB, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "stdin"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// FakeStarted reports whether the FakeCLI in dir was started (it wrote its
// arguments).
func FakeStarted(t testing.TB, dir string) bool {
	t.Helper()
	return Exists(t, dir, "args")
}

// FakeGrace is how long a cancelled run on a FakeLaunch waits for its CLI
// to stop before the kill.
const FakeGrace = 500 * time.Millisecond

// FakeLaunch is the launch of a provider under test on the fake CLI bin:
// the host environment is PATH alone (no secret of the test's environment
// reaches it) and a cancelled run is killed after FakeGrace.
func FakeLaunch(bin string) procrun.Launch {
	return procrun.Launch{Bin: bin, HostEnv: func() []string { return []string{"PATH=/usr/bin:/bin"} }, StopGrace: FakeGrace}
}

// FakeArgs returns the arguments a FakeCLI in dir was last started with.
func FakeArgs(t testing.TB, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "args"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}
