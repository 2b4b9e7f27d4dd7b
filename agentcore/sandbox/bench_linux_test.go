// The cost of a sandboxed start.

package sandbox

import (
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// BenchmarkStart compares a plain start of /bin/true with a sandboxed one
// (the test binary as the helper: its start, the checks, the ruleset, exec);
// go-start is the helper binary starting and exiting, for attribution. Each
// reports its median as p50-ns; sandbox also reports p50-added-ns, its
// median minus the median of plain starts run between its own (outside its
// timer), so that both see the same load of a shared machine.
func BenchmarkStart(b *testing.B) {
	needLandlock(b)
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	p := Policy{
		ReadWrite:  []string{b.TempDir()},
		ReadOnly:   SystemReadOnly(),
		Devices:    SystemDevices(),
		Terminals:  SystemTerminals(),
		ConnectTCP: DefaultConnectTCP(),
		BindTCP:    []uint16{0},
		Scope:      true,
	}
	path, argv, err := Command([]string{exe, "sandbox"}, p, "/bin/true", nil)
	if err != nil {
		b.Fatal(err)
	}
	env := childEnv()
	plain := func() time.Duration {
		start := time.Now()
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	b.Run("plain", func(b *testing.B) {
		var d []time.Duration
		for b.Loop() {
			d = append(d, plain())
		}
		b.ReportMetric(float64(median(d)), "p50-ns")
	})
	b.Run("go-start", func(b *testing.B) {
		// The helper binary started and exiting with nothing to do: what
		// any Go helper costs before it does anything.
		var d []time.Duration
		for b.Loop() {
			start := time.Now()
			cmd := exec.Command(exe, "probe")
			cmd.Env = env
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
			d = append(d, time.Since(start))
		}
		b.ReportMetric(float64(median(d)), "p50-ns")
	})
	b.Run("sandbox", func(b *testing.B) {
		var d, base []time.Duration
		for b.Loop() {
			b.StopTimer()
			base = append(base, plain())
			b.StartTimer()
			start := time.Now()
			cmd := &exec.Cmd{Path: path, Args: argv, Env: env}
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
			d = append(d, time.Since(start))
		}
		b.ReportMetric(float64(median(d)), "p50-ns")
		b.ReportMetric(float64(median(d)-median(base)), "p50-added-ns")
	})
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
