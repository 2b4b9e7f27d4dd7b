// The reload diff: which keys of the file changed, and which of those a
// reload (SIGHUP) puts in force; the others need a restart.

package configs

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Reload is what a reload of next over a running process does. start is the
// config the process started with, applied the one whose reloadable settings
// are in force now (start when nothing was reloaded).
type Reload struct {
	// Effective is next with what a reload cannot change (a front-end
	// section added or removed) kept as applied had it.
	Effective *Config
	// Applied are the changed keys now in force ("slack.channels.C1.allow").
	Applied []string
	// Restart are the keys whose file value differs from the running one
	// and that only a restart applies; they keep their running values.
	Restart []string
	// Took is how long the reload took (read, validate, swap).
	Took time.Duration
}

// PlanReload compares next with the running configs. Keys are config keys,
// never values.
func PlanReload(start, applied, next *Config) Reload {
	// A front-end added or removed needs a restart: the running one keeps
	// its channels' or rooms' rules.
	eff := *next
	if (next.Slack == nil) != (start.Slack == nil) {
		eff.Slack = applied.Slack
	}
	if (next.Matrix == nil) != (start.Matrix == nil) {
		eff.Matrix = applied.Matrix
	}
	r := Reload{Effective: &eff}
	for _, k := range Diff(applied, &eff) {
		if Reloadable(k) {
			r.Applied = append(r.Applied, KeyString(k))
		}
	}
	for _, k := range Diff(start, next) {
		if !Reloadable(k) {
			r.Restart = append(r.Restart, KeyString(k))
		}
	}
	// Unsetting the default interaction timeout cannot be expressed in
	// the policy (zero means "unset" there): the start's value stays.
	if eff.Defaults.InteractionTimeout.Duration == 0 && start.Defaults.InteractionTimeout.Duration != 0 {
		r.Restart = append(r.Restart, "defaults.interaction_timeout (unset)")
	}
	return r
}

// Reloadable reports whether a change of key k (a path of config keys and
// map keys) is applied by a reload.
func Reloadable(k []string) bool {
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

// KeyString writes a key path as in the file: "slack.channels.C1.allow";
// a map key with a dot is quoted (`matrix.rooms["!r:example.org"].allow`).
func KeyString(k []string) string {
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

// Diff lists the keys whose values differ between two configs, in
// file order (struct fields) and sorted map keys. A section present in one
// only is one key; values are compared, never returned.
func Diff(old, next *Config) [][]string {
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
