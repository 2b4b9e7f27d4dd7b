// The container command: a provider's Spec run inside an LXD instance with `lxc exec`.

package procrun

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// DefaultContainerClient is the lxc executable used when the target names none.
const DefaultContainerClient = "lxc"

// ErrContainerClient is returned by Start when the lxc client of a container
// run cannot be found. It does not wrap agent.ErrNotInstalled: the agent CLI
// may well be installed, it is LXD's client that is missing on the host.
var ErrContainerClient = errors.New("procrun: lxc client not found")

// minMaskLen is the shortest secret value that is masked in stderr text;
// shorter values would mangle unrelated text.
const minMaskLen = 4

// clientEnvKeys are host variables the lxc client itself needs (its config
// directory with the remotes and their certificates, the local socket's
// directory); they are read from the bot's environment and never reach the
// container.
var clientEnvKeys = []string{"LXD_CONF", "LXD_DIR"}

// Container env files: where they go inside the instance and the fixed
// script that loads one.
const (
	// ContainerEnvDir is the directory inside the instance that env files
	// are pushed to (created root-only by the push when missing).
	ContainerEnvDir = "/run/threadline"
	// containerScript is run by /bin/sh inside the instance as
	// `sh -c containerScript sh FILE BIN ARGS...`: it opens FILE, removes it
	// before reading a byte, loads its assignments with allexport through the
	// still-open descriptor, closes it and execs BIN ARGS. Nothing after the
	// load uses a shell variable, so no entry of the file can change what it
	// does next. A FILE that cannot be opened ends the shell (a failed
	// redirection of exec), one that cannot be removed exits 125: neither
	// runs BIN.
	containerScript = `exec 3<"$1"; rm -f -- "$1" || exit 125; shift; set -a; . /proc/self/fd/3; set +a; exec 3<&-; exec "$@"`
	// containerShell runs containerScript; every LXD image has it.
	containerShell = "/bin/sh"
	// envRemoveTimeout bounds the removal of an env file left by a failed start.
	envRemoveTimeout = 15 * time.Second
)

var (
	// lxdInstanceName is LXD's rule for instance names.
	lxdInstanceName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]*$`) // at most 63 bytes
	// lxcRemoteName is what an lxc remote name may be here.
	lxcRemoteName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`) // at most 63 bytes
)

// ContainerCmd is the host command that runs a Spec inside its container,
// and the environment file that command loads. Its secret content is only
// ever written to the lxc client's stdin (Push); String and GoString hide it.
type ContainerCmd struct {
	// Bin is the lxc client, Args its arguments (they hold no environment
	// value), ClientEnv the client's own environment.
	Bin       string
	Args      []string
	ClientEnv []string
	// EnvPath is the env file's path inside the instance: ContainerEnvDir
	// and a random name.
	EnvPath string

	ref     string
	content secretBytes
}

// secretBytes is content that fmt never prints.
type secretBytes []byte

// Format prints only the length, for every verb.
func (b secretBytes) Format(f fmt.State, _ rune) { fmt.Fprintf(f, "[%d bytes hidden]", len(b)) }

// ContainerCommand returns the host command that runs spec inside
// spec.Container:
//
//	lxc exec [REMOTE:]INSTANCE --cwd WORKDIR --force-noninteractive -- /bin/sh -c SCRIPT sh ENVFILE BIN ARGS...
//
// Arguments are an array; the script is a constant (see containerScript) and
// BIN and ARGS reach exec unchanged. No environment value is on the command
// line, where any host user could read it in /proc/PID/cmdline: the
// container's environment, ContainerEnv of the provider's Spec.Env (without
// the host's allow-listed variables such as PATH or HOME: the container has
// its own), the target's Secrets, Spec.ForcedEnv and the target's Runtime
// variables, is the content of an env file that Push writes into the
// instance, mode 0600 and owned by root, through the client's stdin. The
// script removes it before the agent starts. The client's environment is
// the host-allowed part of Spec.Env plus LXD_CONF and LXD_DIR from the bot's
// environment; no secret is in it.
//
// Secret values are never logged by procrun, and error texts built here
// name keys only.
func ContainerCommand(spec Spec) (ContainerCmd, error) {
	t := spec.Container
	if t == nil {
		return ContainerCmd{}, errors.New("procrun: no container target")
	}
	if len(t.Instance) > 63 || !lxdInstanceName.MatchString(t.Instance) || strings.HasSuffix(t.Instance, "-") {
		return ContainerCmd{}, fmt.Errorf("procrun: invalid container instance %q", t.Instance)
	}
	if t.Remote != "" && (len(t.Remote) > 63 || !lxcRemoteName.MatchString(t.Remote)) {
		return ContainerCmd{}, fmt.Errorf("procrun: invalid lxc remote %q", t.Remote)
	}
	if spec.Bin == "" {
		return ContainerCmd{}, fmt.Errorf("%w: empty executable name", agent.ErrNotInstalled)
	}
	c := ContainerCmd{Bin: t.Client, ref: t.Ref()}
	if c.Bin == "" {
		c.Bin = DefaultContainerClient
	}
	var fixed []string
	for _, kv := range spec.Env {
		if k, _, ok := strings.Cut(kv, "="); ok && !IsHostAllowed(k) {
			fixed = append(fixed, kv)
		}
	}
	c.content = envFile(ContainerEnv(fixed, t.Secrets, spec.ForcedEnv, t.Runtime))
	var name [16]byte
	if _, err := rand.Read(name[:]); err != nil {
		return ContainerCmd{}, fmt.Errorf("procrun: env file name: %w", err)
	}
	c.EnvPath = ContainerEnvDir + "/env-" + hex.EncodeToString(name[:])

	c.Args = make([]string, 0, 11+len(spec.Args))
	c.Args = append(c.Args, "exec", c.ref, "--cwd", t.Dir(), "--force-noninteractive",
		"--", containerShell, "-c", containerScript, "sh", c.EnvPath, spec.Bin)
	c.Args = append(c.Args, spec.Args...)

	for _, kv := range spec.Env {
		if k, _, ok := strings.Cut(kv, "="); ok && IsHostAllowed(k) {
			c.ClientEnv = append(c.ClientEnv, kv)
		}
	}
	for _, k := range clientEnvKeys {
		if v, ok := os.LookupEnv(k); ok {
			c.ClientEnv = append(c.ClientEnv, k+"="+v)
		}
	}
	return c, nil
}

// envFile renders KEY=VALUE entries (keys already valid shell names, values
// without NUL) as shell assignments, each value single-quoted: inside single
// quotes every byte but the quote itself is literal, newlines included, and
// a quote is written as quote, backslash, quote, quote (end the quoted
// string, an escaped quote, start a new one).
func envFile(env []string) []byte {
	var b bytes.Buffer
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		b.WriteString(k)
		b.WriteString("='")
		b.WriteString(strings.ReplaceAll(v, "'", `'\''`))
		b.WriteString("'\n")
	}
	return b.Bytes()
}

// Push writes the env file into the instance with `lxc file push - REF/PATH
// -p --mode 0600 --uid 0 --gid 0`, its content on the client's stdin. On a
// failure it removes whatever part of the file was written.
func (c ContainerCmd) Push(ctx context.Context) error {
	path, err := exec.LookPath(c.Bin)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrContainerClient, c.Bin, err)
	}
	if err := c.lxc(ctx, path, c.content, "file", "push", "-", c.ref+c.EnvPath, "--create-dirs", "--mode", "0600", "--uid", "0", "--gid", "0"); err != nil {
		c.Remove(ctx)
		return fmt.Errorf("procrun: push the env file into %s: %w", c.ref, err)
	}
	return nil
}

// Remove deletes the env file inside the instance, best effort, for a start
// that failed before the script could remove it. It outlives ctx's
// cancellation, bounded by its own timeout.
func (c ContainerCmd) Remove(ctx context.Context) {
	path, err := exec.LookPath(c.Bin)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), envRemoveTimeout)
	defer cancel()
	_ = c.lxc(ctx, path, nil, "exec", c.ref, "--force-noninteractive", "--disable-stdin", "--", "rm", "-f", "--", c.EnvPath)
}

// lxc runs the client with stdin and returns its last stderr line on failure.
func (c ContainerCmd) lxc(ctx context.Context, path string, stdin []byte, args ...string) error {
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = c.ClientEnv
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	cmd.Stdin = bytes.NewReader(stdin)
	var errb bytes.Buffer
	cmd.Stderr = &capWriter{w: &errb, n: 4 << 10}
	cmd.WaitDelay = waitDelay
	if err := cmd.Run(); err != nil {
		if tail := StderrTail(errb.String(), 512); tail != "" {
			return fmt.Errorf("%w: %s", err, tail)
		}
		return err
	}
	return nil
}

// capWriter passes on the first n bytes written and drops the rest.
type capWriter struct {
	w io.Writer
	n int
}

func (c *capWriter) Write(p []byte) (int, error) {
	if k := min(c.n, len(p)); k > 0 {
		c.n -= k
		_, _ = c.w.Write(p[:k])
	}
	return len(p), nil
}

// String names the instance and the file, never the content.
func (c ContainerCmd) String() string {
	return fmt.Sprintf("lxc exec %s (env file %s, %d bytes)", c.ref, c.EnvPath, len(c.content))
}

// GoString is String, so %#v hides the content too.
func (c ContainerCmd) GoString() string { return c.String() }

// ContainerEnv composes a container run's environment as KEY=VALUE entries in
// this order, a later entry replacing an earlier one with the same key: the
// provider's fixed entries, the project's secrets in their order, the
// provider's forced entries, then the runtime variables sorted by key.
//
// A runtime key masks a secret of the same name even when the runtime entry
// itself is invalid and dropped. Invalid entries are dropped from every
// section: a key that is not a shell variable name ([A-Za-z_][A-Za-z0-9_]*),
// a value holding a NUL byte, and any of the bot's own credential names (see
// IsBotSecret).
func ContainerEnv(fixed []string, secrets []agent.EnvVar, forced []string, runtime []agent.EnvVar) []string {
	type entry struct{ k, v string }
	var all []entry
	add := func(k, v string) {
		if validEnv(k, v) {
			all = append(all, entry{k, v})
		}
	}
	split := func(kvs []string) {
		for _, kv := range kvs {
			if k, v, ok := strings.Cut(kv, "="); ok {
				add(k, v)
			}
		}
	}
	masked := make(map[string]bool, len(runtime))
	for _, r := range runtime {
		masked[r.Key] = true
	}
	split(fixed)
	for _, s := range secrets {
		if !masked[s.Key] {
			add(s.Key, s.Value)
		}
	}
	split(forced)
	rt := append([]agent.EnvVar(nil), runtime...)
	sort.SliceStable(rt, func(i, j int) bool { return rt[i].Key < rt[j].Key })
	for _, r := range rt {
		add(r.Key, r.Value)
	}
	last := make(map[string]int, len(all))
	for i, e := range all {
		last[e.k] = i
	}
	out := make([]string, 0, len(last))
	for i, e := range all {
		if last[e.k] == i {
			out = append(out, e.k+"="+e.v)
		}
	}
	return out
}

// validEnv reports whether k=v may be passed to a container.
func validEnv(k, v string) bool {
	if k == "" || strings.ContainsRune(v, 0) || IsBotSecret(k) {
		return false
	}
	for i, r := range k {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// secretMasker returns a function replacing every secret value (of at least
// minMaskLen bytes) with "***", or nil when there is nothing to mask.
func secretMasker(secrets []agent.EnvVar) func(string) string {
	var pairs []string
	seen := map[string]bool{}
	for _, s := range secrets {
		if len(s.Value) >= minMaskLen && !seen[s.Value] {
			seen[s.Value] = true
			pairs = append(pairs, s.Value)
		}
	}
	if len(pairs) == 0 {
		return nil
	}
	// Longer values first, so that a secret containing another is masked whole.
	sort.Slice(pairs, func(i, j int) bool { return len(pairs[i]) > len(pairs[j]) })
	oldnew := make([]string, 0, 2*len(pairs))
	for _, p := range pairs {
		oldnew = append(oldnew, p, "***")
	}
	r := strings.NewReplacer(oldnew...)
	return r.Replace
}

// launch is what Start executes for a Spec.
type launch struct {
	path string
	args []string
	dir  string
	env  []string
	// mask hides secret values in captured stderr; nil masks nothing.
	mask func(string) string
	// container, for a container run, is the command whose env file must be
	// pushed before the launch starts (pushEnv).
	container *ContainerCmd
}

// launchOf resolves spec to a host command: the agent itself, or the lxc
// client running it in spec.Container.
func launchOf(spec Spec) (launch, error) {
	if spec.Container == nil {
		path, err := LookPath(spec.Bin)
		if err != nil {
			return launch{}, err
		}
		env := spec.Env
		if len(spec.ForcedEnv) > 0 {
			env = append(append([]string{}, spec.Env...), spec.ForcedEnv...)
		}
		return launch{path: path, args: spec.Args, dir: spec.Dir, env: env}, nil
	}
	c, err := ContainerCommand(spec)
	if err != nil {
		return launch{}, err
	}
	path, err := exec.LookPath(c.Bin)
	if err != nil {
		return launch{}, fmt.Errorf("%w: %s: %w", ErrContainerClient, c.Bin, err)
	}
	return launch{path: path, args: c.Args, env: c.ClientEnv, mask: secretMasker(spec.Container.Secrets), container: &c}, nil
}

// pushEnv writes a container launch's env file into its instance; it does
// nothing for a host launch.
func (l launch) pushEnv(ctx context.Context) error {
	if l.container == nil {
		return nil
	}
	return l.container.Push(ctx)
}

// dropEnv removes a container launch's env file after a start that failed.
func (l launch) dropEnv(ctx context.Context) {
	if l.container != nil {
		l.container.Remove(ctx)
	}
}
