// SIGHUP reloads serve's config file: access rules, channel and room
// settings, agents and defaults are swapped in for what starts next (running
// runs are untouched); settings that need a restart are reported and kept.

package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// reloadState is embedded in app: what the last reload put in force.
type reloadState struct {
	// reloadMu makes reloads one at a time.
	reloadMu sync.Mutex
	// applied is the last config whose reloadable settings are in force;
	// nil means the start's (app.cfg).
	applied *Config
	// reloadedAgents is the agent set of the last reload; nil means app.agents.
	reloadedAgents atomic.Pointer[agentSet]
}

// agentTable is the agent set in force: the last reload's, else the start's.
func (a *app) agentTable() *agentSet {
	if s := a.reloadedAgents.Load(); s != nil {
		return s
	}
	return a.agents
}

// hangups makes SIGHUP reach the returned channel instead of ending the
// process (Go's default for an unhandled SIGHUP is exit 129); a signal that
// arrives before the reload loop runs waits in the channel. signal.Stop
// undoes it.
func hangups() chan os.Signal {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	return ch
}

// reloadOn reloads the config file at path on every signal from hup until
// ctx ends. An empty path searches the default places again, as serve did.
func (a *app) reloadOn(ctx context.Context, hup <-chan os.Signal, path string) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			_, _ = a.reload(ctx, path) // reload logs its outcome
		}
	}
}

// reloadResult says what a reload did. Keys are config keys
// ("slack.channels.C1.allow"), never values.
type reloadResult struct {
	// Applied are the changed keys now in force.
	Applied []string
	// Restart are the keys whose file value differs from the running one
	// and that only a restart applies; they keep their running values.
	Restart []string
	// Took is how long the reload took (read, validate, swap).
	Took time.Duration
}

// reload reads the config file at path and, when it is valid, puts its
// reloadable settings in force: access.admins, the Slack workspace and
// channels, the Matrix rooms and the defaults (the access policy the front
// desk checks), and the agents section (the agent table the next run starts
// from). Running runs keep what they started with. Everything else is
// reported as needing a restart and keeps its running value. An invalid
// file is refused with its error and nothing changes. The one shared
// redactor learns the new file's secret values before anything is logged.
func (a *app) reload(ctx context.Context, path string) (reloadResult, error) {
	a.reloadMu.Lock()
	defer a.reloadMu.Unlock()
	start := time.Now()
	res, err := a.reloadLocked(path)
	res.Took = time.Since(start)
	if err != nil {
		a.log.ErrorContext(ctx, "config reload refused; the running config is kept", "path", path, "err", err, "took", res.Took)
		return res, err
	}
	if len(res.Restart) > 0 {
		a.log.WarnContext(ctx, "config reload: these settings need a restart and keep their running values", "needs_restart", strings.Join(res.Restart, ", "))
	}
	changed := strings.Join(res.Applied, ", ")
	if changed == "" {
		changed = "(nothing)"
	}
	a.log.InfoContext(ctx, "config reloaded", "path", path, "changed", changed, "took", res.Took)
	return res, nil
}

func (a *app) reloadLocked(path string) (reloadResult, error) {
	if path == "" {
		path = a.cfg.path
	}
	next, err := loadConfig(path)
	if err != nil {
		return reloadResult{}, err
	}
	// The new file's secrets join the one redactor of the logger, the
	// prompt service and the front-ends (loadAgents adds the host
	// credentials it passes to it too), so that nothing below logs them.
	a.redactor.Add(next.secrets()...)
	redactors.Store(next, a.redactor)
	defer redactors.Delete(next)
	set, err := loadAgents(next, a.log)
	if err != nil {
		return reloadResult{}, err
	}
	prev := a.applied
	if prev == nil {
		prev = a.cfg
	}
	// A front-end added or removed needs a restart: the running one keeps
	// its channels' or rooms' rules.
	eff := *next
	if (next.Slack == nil) != (a.cfg.Slack == nil) {
		eff.Slack = prev.Slack
	}
	if (next.Matrix == nil) != (a.cfg.Matrix == nil) {
		eff.Matrix = prev.Matrix
	}
	var res reloadResult
	for _, k := range configDiff(prev, &eff) {
		if reloadable(k) {
			res.Applied = append(res.Applied, keyString(k))
		}
	}
	for _, k := range configDiff(a.cfg, next) {
		if !reloadable(k) {
			res.Restart = append(res.Restart, keyString(k))
		}
	}
	// Unsetting the default interaction timeout cannot be expressed in
	// the policy (zero means "unset" there): the start's value stays.
	if eff.Defaults.InteractionTimeout.Duration == 0 && a.cfg.Defaults.InteractionTimeout.Duration != 0 {
		res.Restart = append(res.Restart, "defaults.interaction_timeout (unset)")
	}

	a.reloadedAgents.Store(set)
	a.prompt.Reconfigure(set.configs, eff.skills())
	if a.threads != nil {
		def := eff.Defaults.Agent
		if def == "" {
			def = firstInstalled(set)
		}
		a.threads.Policy().Replace(policyOf(&eff, def))
	}
	a.applied = &eff
	return res, nil
}

// firstInstalled is the first of defaultAgents that set can launch, or "".
func firstInstalled(set *agentSet) string {
	for _, id := range defaultAgents {
		if _, _, err := set.launch(id); err == nil {
			return id
		}
	}
	return ""
}

// reloadable reports whether a change of key k (a path of config keys and
// map keys) is applied by a reload.
func reloadable(k []string) bool {
	match := func(pattern ...string) bool {
		if len(k) < len(pattern) {
			return false
		}
		for i, p := range pattern {
			if p != "*" && p != k[i] {
				return false
			}
		}
		return true
	}
	switch {
	case match("access", "admins"),
		match("defaults", "agent"), match("defaults", "interaction_timeout"), match("defaults", "skills"),
		match("defaults", "idle_timeout"),
		match("slack", "workspace"), match("slack", "channels"), match("matrix", "rooms"):
		return true
	case match("agents") && len(k) <= 2: // an agent added or removed
		return true
	case match("agents", "*"):
		return slices.Contains([]string{"base", "bin", "args", "env", "model", "pass_env", "idle_timeout"}, k[2])
	}
	return false
}

// keyString writes a key path as in the file: "slack.channels.C1.allow";
// a map key with a dot is quoted (`matrix.rooms["!r:example.org"].allow`).
func keyString(k []string) string {
	var b strings.Builder
	for i, s := range k {
		switch {
		case strings.ContainsAny(s, ". \"[]"):
			b.WriteString("[" + strconv.Quote(s) + "]")
		case i > 0:
			b.WriteString("." + s)
		default:
			b.WriteString(s)
		}
	}
	return b.String()
}

// configDiff lists the keys whose values differ between two configs, in
// file order (struct fields) and sorted map keys. A section present in one
// only is one key; values are compared, never returned.
func configDiff(old, next *Config) [][]string {
	var out [][]string
	diffValue(nil, reflect.ValueOf(*old), reflect.ValueOf(*next), &out)
	return out
}

func diffValue(path []string, x, y reflect.Value, out *[][]string) {
	at := func() { *out = append(*out, slices.Clone(path)) }
	switch x.Kind() {
	case reflect.Pointer:
		switch {
		case x.IsNil() && y.IsNil():
		case x.IsNil() || y.IsNil():
			at()
		default:
			diffValue(path, x.Elem(), y.Elem(), out)
		}
	case reflect.Struct:
		t := x.Type()
		keyed := false
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if !f.IsExported() || name == "" || name == "-" {
				continue
			}
			keyed = true
			diffValue(append(path, name), x.Field(i), y.Field(i), out)
		}
		if !keyed && !reflect.DeepEqual(x.Interface(), y.Interface()) { // a value type (Duration)
			at()
		}
	case reflect.Map:
		keys := map[string]reflect.Value{}
		for _, m := range []reflect.Value{x, y} {
			for _, k := range m.MapKeys() {
				keys[fmt.Sprint(k.Interface())] = k
			}
		}
		names := make([]string, 0, len(keys))
		for n := range keys {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			k := keys[n]
			xv, yv := x.MapIndex(k), y.MapIndex(k)
			if !xv.IsValid() || !yv.IsValid() {
				*out = append(*out, append(slices.Clone(path), n))
				continue
			}
			diffValue(append(path, n), xv, yv, out)
		}
	case reflect.Slice:
		if (x.Len() != 0 || y.Len() != 0) && !reflect.DeepEqual(x.Interface(), y.Interface()) {
			at()
		}
	default:
		if !reflect.DeepEqual(x.Interface(), y.Interface()) {
			at()
		}
	}
}
