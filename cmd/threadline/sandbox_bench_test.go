package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/sandbox"
)

// BenchmarkStartPlain, BenchmarkStartSandboxedHelper and
// BenchmarkStartSandboxedMain compare starting /bin/true directly with
// starting it through the sandbox helper, the small threadline-sandbox
// binary (what a run uses when it is installed beside threadline), and the
// main binary's own `sandbox` subcommand (its fallback): each the helper's
// start, a chat's Landlock ruleset, then the exec, waiting for the exit.
// Their difference is what the sandbox adds to every agent start.
func BenchmarkStartPlain(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStartSandboxedHelper(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "threadline-sandbox")
	if out, err := exec.Command("go", "build", "-o", bin, "../threadline-sandbox").CombinedOutput(); err != nil {
		b.Fatalf("build the helper: %v\n%s", err, out)
	}
	benchSandboxed(b, bin)
}

func BenchmarkStartSandboxedMain(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "threadline")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("build threadline: %v\n%s", err, out)
	}
	benchSandboxed(b, bin, "sandbox")
}

func benchSandboxed(b *testing.B, helper ...string) {
	if ok, why := sandbox.Available(); !ok {
		b.Skip(why)
	}
	ro, err := sandbox.Exclude(sandbox.SystemReadOnly(), nil)
	if err != nil {
		b.Fatal(err)
	}
	p := sandbox.Policy{ReadWrite: []string{b.TempDir()}, ReadOnly: ro, Devices: sandbox.SystemDevices(),
		ConnectTCP: sandbox.DefaultConnectTCP(), BindTCP: []uint16{0}, Scope: true}
	pj, _ := json.Marshal(p)
	args := append(helper[1:len(helper):len(helper)], string(pj), "--", "/bin/true")
	b.ResetTimer()
	for b.Loop() {
		if out, err := exec.Command(helper[0], args...).CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}
}
