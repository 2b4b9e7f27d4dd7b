// The container command: a provider's Spec run inside an LXD instance with `lxc exec`.

package procrun

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"

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

// ContainerCommand returns the host command that runs spec inside
// spec.Container: the lxc client, its arguments and its own environment.
//
//	lxc exec [REMOTE:]INSTANCE --cwd WORKDIR --force-noninteractive --env=K=V ... -- BIN ARGS...
//
// Arguments are an array; nothing passes through a shell. The container's
// environment is ContainerEnv of the provider's Spec.Env (without the host's
// allow-listed variables such as PATH or HOME: the container has its own),
// the target's Secrets, Spec.ForcedEnv and the target's Runtime variables.
// The client's environment is the host-allowed part of Spec.Env plus
// LXD_CONF and LXD_DIR from the bot's environment; no secret is in it.
//
// Secret values are in the client's argv (visible in /proc to host users who
// may inspect the bot's processes); they are never logged by procrun, and
// error texts built here name keys only.
func ContainerCommand(spec Spec) (bin string, args, clientEnv []string, err error) {
	t := spec.Container
	if t == nil {
		return "", nil, nil, errors.New("procrun: no container target")
	}
	if t.Instance == "" || strings.ContainsAny(t.Instance, ":/ ") {
		return "", nil, nil, fmt.Errorf("procrun: invalid container instance %q", t.Instance)
	}
	if spec.Bin == "" {
		return "", nil, nil, fmt.Errorf("%w: empty executable name", agent.ErrNotInstalled)
	}
	bin = t.Client
	if bin == "" {
		bin = DefaultContainerClient
	}
	var fixed []string
	for _, kv := range spec.Env {
		if k, _, ok := strings.Cut(kv, "="); ok && !IsHostAllowed(k) {
			fixed = append(fixed, kv)
		}
	}
	env := ContainerEnv(fixed, t.Secrets, spec.ForcedEnv, t.Runtime)
	args = make([]string, 0, 8+len(env)+len(spec.Args))
	args = append(args, "exec", t.Ref(), "--cwd", t.Dir(), "--force-noninteractive")
	for _, kv := range env {
		args = append(args, "--env="+kv)
	}
	args = append(args, "--", spec.Bin)
	args = append(args, spec.Args...)

	for _, kv := range spec.Env {
		if k, _, ok := strings.Cut(kv, "="); ok && IsHostAllowed(k) {
			clientEnv = append(clientEnv, kv)
		}
	}
	for _, k := range clientEnvKeys {
		if v, ok := os.LookupEnv(k); ok {
			clientEnv = append(clientEnv, k+"="+v)
		}
	}
	return bin, args, clientEnv, nil
}

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
	bin, args, env, err := ContainerCommand(spec)
	if err != nil {
		return launch{}, err
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return launch{}, fmt.Errorf("%w: %s: %w", ErrContainerClient, bin, err)
	}
	return launch{path: path, args: args, env: env, mask: secretMasker(spec.Container.Secrets)}, nil
}
