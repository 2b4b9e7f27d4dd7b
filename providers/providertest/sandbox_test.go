package providertest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/providers/providertest/fakeopenai"
)

// envProbe makes the test binary the probe of TestSandboxedRun: it tries
// each of its arguments and prints "<arg> yes" or "<arg> no".
const envProbe = "PROVIDERTEST_PROBE"

func TestMain(m *testing.M) {
	RunSandboxIfAsked()
	if os.Getenv(envProbe) == "1" {
		probe(os.Args[1:])
		os.Exit(0)
	}
	Main(m)
}

// probe tries each of args: uid (prints the uid), env:KEY (prints its
// value), write:PATH, read:PATH, connect:PORT (127.0.0.1), own:PORT and
// own:0 (listen on the port, then connect to where it listens).
func probe(args []string) {
	for _, a := range args {
		kind, arg, _ := strings.Cut(a, ":")
		var err error
		switch kind {
		case "uid":
			fmt.Printf("uid %d\n", os.Getuid())
			continue
		case "env":
			fmt.Printf("env:%s %s\n", arg, os.Getenv(arg))
			continue
		case "write":
			err = os.WriteFile(arg, []byte("x"), 0o600)
		case "read":
			_, err = os.ReadFile(arg)
		case "connect":
			var c net.Conn
			if c, err = net.Dial("tcp", "127.0.0.1:"+arg); err == nil {
				c.Close()
			}
		case "own":
			var l net.Listener
			if l, err = net.Listen("tcp", "127.0.0.1:"+arg); err == nil {
				var c net.Conn
				if c, err = net.Dial("tcp", l.Addr().String()); err == nil {
					c.Close()
				}
				l.Close()
			}
		default:
			err = errors.New("unknown probe")
		}
		if err != nil {
			fmt.Printf("%s no\n", a)
		} else {
			fmt.Printf("%s yes\n", a)
		}
	}
}

// probeRunner runs the probe (bin) with env and the arguments args returns
// for the run's request, each line of its output an assistant.delta.
type probeRunner struct {
	bin  string
	env  map[string]string
	args func(req agent.RunRequest) []string
}

func (r probeRunner) Run(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
	l := procrun.Launch{Bin: r.bin, Env: r.env}.WithDefaults(r.bin, FakeGrace)
	p, err := procrun.Start(ctx, nil, l.Spec(req, r.args(req), nil))
	if err != nil {
		return err
	}
	if err := p.Each(func(line []byte) error {
		emit(agent.Event{Type: agent.EventAssistantDelta, Text: string(line) + "\n"})
		return nil
	}); err != nil {
		return err
	}
	if err := p.Wait(); err != nil {
		return err
	}
	emit(agent.Event{Type: agent.EventRunCompleted})
	return nil
}

// TestSandboxedRun: a run of a sandboxed e2e test (the default) starts as
// the agent user (when the test runs as root) in the sandbox: it writes its
// working directory, HOME and the TMPDIR of the run; it reads the system
// but not a file of the test's outside its directories, though the agent
// user could; it connects to the model server's port and to its own port
// (LocalPort) where it listens, but neither to another local server nor to
// a port the kernel picked for it.
func TestSandboxedRun(t *testing.T) {
	if SandboxOff() {
		t.Skip(SandboxEnv + "=off")
	}
	prepareSandbox(t)
	if !InNetns(t) {
		return
	}
	fake := fakeopenai.New(t)
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	otherPort := strconv.Itoa(other.Addr().(*net.TCPAddr).Port)
	fakePort := fake.URL()[strings.LastIndexByte(fake.URL(), ':')+1:]

	env := map[string]string{envProbe: "1", "OPENAI_BASE_URL": fake.URL() + "/v1"}
	Sandboxed(t, env)
	home := env["HOME"]
	// The test's own file, readable by anyone who reaches it.
	secret := filepath.Join(filepath.Dir(t.TempDir()), "secret")
	if err := os.WriteFile(secret, []byte("test's"), 0o644); err != nil {
		t.Fatal(err)
	}
	cwd := t.TempDir()
	var (
		tmp string
		own int
	)
	runner := probeRunner{bin: SelfExe(t), env: env, args: func(req agent.RunRequest) []string {
		tmp, own = req.Env["TMPDIR"], req.LocalPort
		return []string{"uid", "env:TMPDIR", "write:" + filepath.Join(cwd, "ok"), "write:" + filepath.Join(tmp, "ok"),
			"write:" + filepath.Join(home, "ok"), "read:/etc/passwd", "read:" + secret,
			"connect:" + fakePort, "connect:" + otherPort, "own:" + strconv.Itoa(own), "own:0"}
	}}
	r := Run(t, runner, agent.RunRequest{Prompt: "probe", Cwd: cwd}, nil)
	if r.Err != nil {
		t.Fatalf("Run: %v", r.Err)
	}
	b := boxOf(t)
	uid := os.Getuid()
	if b.iso != nil {
		uid = int(b.iso.UID)
	}
	want := fmt.Sprintf("uid %d\nenv:TMPDIR %s\nwrite:%s yes\nwrite:%s yes\nwrite:%s yes\nread:/etc/passwd yes\nread:%s no\n"+
		"connect:%s yes\nconnect:%s no\nown:%d yes\nown:0 no\n", uid, tmp, filepath.Join(cwd, "ok"), filepath.Join(tmp, "ok"),
		filepath.Join(home, "ok"), secret, fakePort, otherPort, own)
	t.Logf("sandboxed probe:\n%s", r.Text())
	if got := r.Text(); got != want || tmp == "" || own == 0 {
		t.Errorf("sandboxed probe:\n%s\nwant:\n%s", got, want)
	}
	// The same user outside the sandbox reads the test's file.
	if b.iso == nil {
		return
	}
	p, err := procrun.Start(procrun.WithIsolation(context.Background(), b.iso), nil,
		procrun.Spec{Bin: SelfExe(t), Args: []string{"read:" + secret}, Env: []string{envProbe + "=1"}, Dir: "/"})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := p.Each(func(line []byte) error { out.Write(line); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(); err != nil || out.String() != "read:"+secret+" yes" {
		t.Errorf("unsandboxed, the agent user's probe: %q, %v", out.String(), err)
	}
}

// TestSandboxedRunAsOrdinaryUser: TestSandboxedRun as an ordinary user,
// whose runs start as that user itself in the sandbox: its probe reads no
// file of the test's outside its directories either, though they are that
// user's own.
func TestSandboxedRunAsOrdinaryUser(t *testing.T) {
	AsOrdinaryUser(t, "^TestSandboxedRun$")
}

// TestProbeConfine: a probe readied by ProbeConfine (version, model
// listing) starts as a run does, as the agent user in the sandbox, in a
// working directory, HOME and TMPDIR it may write.
func TestProbeConfine(t *testing.T) {
	if SandboxOff() {
		t.Skip(SandboxEnv + "=off")
	}
	confine := ProbeConfine(t)
	ctx, env, dir, err := confine(context.Background(), registry.Definition{}, []string{"PATH=/usr/bin:/bin", "HOME=/root", envProbe + "=1"})
	if err != nil {
		t.Fatal(err)
	}
	lookup := func(k string) (v string) {
		for _, kv := range env {
			if key, val, _ := strings.Cut(kv, "="); key == k {
				v = val // the last wins
			}
		}
		return v
	}
	home, tmp := lookup("HOME"), lookup("TMPDIR")
	p, err := procrun.Start(ctx, nil, procrun.Spec{Bin: SelfExe(t), Args: []string{"uid", "write:" + filepath.Join(dir, "ok"),
		"write:" + filepath.Join(home, "ok"), "write:" + filepath.Join(tmp, "ok"), "write:/root/ok"}, Env: env, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := p.Each(func(line []byte) error { out.Write(line); out.WriteByte('\n'); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	uid := os.Getuid()
	if b := boxOf(t); b.iso != nil {
		uid = int(b.iso.UID)
	}
	want := fmt.Sprintf("uid %d\nwrite:%s yes\nwrite:%s yes\nwrite:%s yes\nwrite:/root/ok no\n", uid, filepath.Join(dir, "ok"),
		filepath.Join(home, "ok"), filepath.Join(tmp, "ok"))
	if out.String() != want || home == "/root" || tmp == "" {
		t.Errorf("probe:\n%s\nwant:\n%s", out.String(), want)
	}
}
