// ContainerTarget: where a project chat's run executes.

package agent

import (
	"fmt"
	"strings"
)

// DefaultWorkdir is the directory a run executes in inside a project container.
const DefaultWorkdir = "/workspace"

// EnvVar is one environment entry of a container run. Its String method never
// shows the value.
type EnvVar struct {
	Key   string
	Value string
}

// String names the key and hides the value.
func (e EnvVar) String() string { return e.Key + "=***" }

// GoString hides the value from %#v as well.
func (e EnvVar) GoString() string { return fmt.Sprintf("agent.EnvVar{Key: %q, Value: \"***\"}", e.Key) }

// ContainerTarget is the LXD instance a project chat's run executes in, as
// the preparer readied it. A provider passes it on unchanged
// (procrun.Spec.Container), and procrun turns the provider's command into
// `lxc exec [REMOTE:]INSTANCE --cwd WORKDIR --env K=V ... -- BIN ARGS...`.
//
// The container's environment is built in this order (a later entry wins
// over an earlier one with the same key): the provider's fixed entries, the
// project's Secrets in their order, the provider's forced entries, then
// Runtime sorted by key. A Runtime key masks a Secret of the same name even
// when the Runtime entry itself is invalid and dropped.
//
// Secret values are never printed by String or GoString, and must never be
// logged, persisted or posted.
type ContainerTarget struct {
	// Client is the lxc executable (a name looked up in PATH or a path);
	// empty means "lxc".
	Client string
	// Remote is the lxc remote the instance lives on; empty means the
	// client's default (the local unix socket unless configured otherwise).
	Remote string
	// Instance is the LXD instance name.
	Instance string
	// Workdir is the directory inside the instance the command runs in;
	// empty means DefaultWorkdir. The preparer has created it.
	Workdir string
	// Secrets are the project's secret variables, in order.
	Secrets []EnvVar
	// Runtime are variables the core issues for this run.
	Runtime []EnvVar
}

// Ref is the instance as lxc names it: "REMOTE:INSTANCE" or "INSTANCE".
func (t ContainerTarget) Ref() string {
	if t.Remote == "" {
		return t.Instance
	}
	return t.Remote + ":" + t.Instance
}

// Dir is Workdir or DefaultWorkdir.
func (t ContainerTarget) Dir() string {
	if t.Workdir == "" {
		return DefaultWorkdir
	}
	return t.Workdir
}

// String names the instance, the directory and the keys, never a value.
func (t ContainerTarget) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "container %s in %s", t.Ref(), t.Dir())
	keys := func(label string, vs []EnvVar) {
		if len(vs) == 0 {
			return
		}
		names := make([]string, len(vs))
		for i, v := range vs {
			names[i] = v.Key
		}
		fmt.Fprintf(&b, " %s [%s]", label, strings.Join(names, " "))
	}
	keys("secrets", t.Secrets)
	keys("runtime", t.Runtime)
	return b.String()
}

// GoString is String, so that %#v hides the values too.
func (t ContainerTarget) GoString() string { return "agent.ContainerTarget{" + t.String() + "}" }
