// configdoc_test.go: docs/config.md documents exactly the keys the config file accepts.

package configs

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// configDocPath is the config reference, relative to this package.
const configDocPath = "../docs/config.md"

// configKeyPaths walks t's yaml tags and returns every key path the decoder
// accepts: leaves ("slack.bot_token") and the sections above them
// ("slack", "slack.channels", "slack.channels.<id>"). A map of structs adds
// the segment "<id>", a slice of structs "[]"; a type that decodes itself
// (yaml.Unmarshaler, such as Duration) is a leaf.
func configKeyPaths(t reflect.Type) (leaves, sections []string) {
	unmarshaler := reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()
	var walk func(t reflect.Type, prefix string, seen []reflect.Type)
	join := func(prefix, seg string) string {
		if prefix == "" {
			return seg
		}
		return prefix + "." + seg
	}
	walk = func(t reflect.Type, prefix string, seen []reflect.Type) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		isStruct := t.Kind() == reflect.Struct && !reflect.PointerTo(t).Implements(unmarshaler)
		switch {
		case isStruct && !slices.Contains(seen, t):
			if prefix != "" {
				sections = append(sections, prefix)
			}
			seen = append(seen, t)
			for i := range t.NumField() {
				f := t.Field(i)
				if !f.IsExported() {
					continue
				}
				tag := f.Tag.Get("yaml")
				name, opts, _ := strings.Cut(tag, ",")
				if name == "-" {
					continue
				}
				if strings.Contains(opts, "inline") {
					walk(f.Type, prefix, seen)
					continue
				}
				if name == "" {
					name = strings.ToLower(f.Name)
				}
				walk(f.Type, join(prefix, name), seen)
			}
		case t.Kind() == reflect.Map && isConfigStruct(t.Elem(), unmarshaler):
			sections = append(sections, prefix)
			walk(t.Elem(), join(prefix, "<id>"), seen)
		case t.Kind() == reflect.Slice && isConfigStruct(t.Elem(), unmarshaler):
			sections = append(sections, prefix)
			walk(t.Elem(), prefix+"[]", seen)
		default:
			leaves = append(leaves, prefix)
		}
	}
	walk(t, "", nil)
	return leaves, sections
}

// isConfigStruct reports whether t (or what it points to) is a struct whose
// keys are decoded field by field.
func isConfigStruct(t, unmarshaler reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.Struct && !reflect.PointerTo(t).Implements(unmarshaler)
}

var (
	// fencedBlock is a ``` code block: its text is an example, not the reference.
	fencedBlock = regexp.MustCompile("(?ms)^[ \t]*```.*?^[ \t]*```[ \t]*$")
	// codeSpan is an inline `code` span.
	codeSpan = regexp.MustCompile("`([^`\n]+)`")
	// keyPathLike is a dotted key path such as slack.channels.<id>.allow.
	keyPathLike = regexp.MustCompile(`^[a-z][a-z0-9_]*(\[\])?(\.([a-z][a-z0-9_]*|<[a-z]+>)(\[\])?)+$`)
)

// documentedKeyPaths returns the code spans of doc (outside fenced blocks)
// that name a key path: a dotted path whose first segment is one of roots,
// or a lone root.
func documentedKeyPaths(doc string, roots []string) map[string]bool {
	doc = fencedBlock.ReplaceAllString(doc, "")
	out := map[string]bool{}
	for _, m := range codeSpan.FindAllStringSubmatch(doc, -1) {
		s := strings.TrimSpace(m[1])
		first, _, _ := strings.Cut(s, ".")
		first = strings.TrimSuffix(first, "[]")
		if !slices.Contains(roots, first) {
			continue
		}
		if s == first || keyPathLike.MatchString(s) {
			out[s] = true
		}
	}
	return out
}

// TestConfigDoc fails for every key of Config missing from docs/config.md
// (each key path in backticks, e.g. `slack.channels.<id>.approvers`) and for
// every key path the document names that the config no longer has.
func TestConfigDoc(t *testing.T) {
	raw, err := os.ReadFile(configDocPath)
	if err != nil {
		t.Fatalf("read the config reference: %v", err)
	}
	leaves, sections := configKeyPaths(reflect.TypeOf(Config{}))
	if len(leaves) < 20 || !slices.Contains(leaves, "slack.channels.<id>.approvers") || !slices.Contains(leaves, "defaults.interaction_timeout") {
		t.Fatalf("the walk of Config found an unexpected set of keys: %v", leaves)
	}
	var roots []string
	for _, p := range append(slices.Clone(leaves), sections...) {
		root, _, _ := strings.Cut(p, ".")
		root = strings.TrimSuffix(root, "[]")
		if !slices.Contains(roots, root) {
			roots = append(roots, root)
		}
	}
	documented := documentedKeyPaths(string(raw), roots)

	var missing []string
	for _, p := range leaves {
		if !documented[p] {
			missing = append(missing, p)
		}
	}
	known := map[string]bool{}
	for _, p := range append(slices.Clone(leaves), sections...) {
		known[p] = true
	}
	var stale []string
	for p := range documented {
		if !known[p] {
			stale = append(stale, p)
		}
	}
	sort.Strings(stale)
	if len(missing) > 0 {
		t.Errorf("docs/config.md does not document these config keys (write each key path in backticks with its type, default and meaning):\n  %s",
			strings.Join(missing, "\n  "))
	}
	if len(stale) > 0 {
		t.Errorf("docs/config.md names key paths the config does not have (removed or renamed? maps use <id>):\n  %s",
			strings.Join(stale, "\n  "))
	}
}

// TestConfigDocWalk pins the walk itself on a small struct, so the doc test
// cannot pass by finding nothing.
func TestConfigDocWalk(t *testing.T) {
	type inner struct {
		A string `yaml:"a"`
		B Duration
		C string `yaml:"-"`
	}
	type outer struct {
		X inner            `yaml:"x"`
		M map[string]inner `yaml:"m"`
		P *inner           `yaml:"p"`
		S []inner          `yaml:"s"`
		L []string         `yaml:"l"`
		E map[string]string
		_ string // unexported: skipped
	}
	leaves, sections := configKeyPaths(reflect.TypeOf(outer{}))
	wantLeaves := []string{"x.a", "x.b", "m.<id>.a", "m.<id>.b", "p.a", "p.b", "s[].a", "s[].b", "l", "e"}
	wantSections := []string{"x", "m", "m.<id>", "p", "s", "s[]"}
	if !slices.Equal(leaves, wantLeaves) {
		t.Errorf("leaves = %v, want %v", leaves, wantLeaves)
	}
	if !slices.Equal(sections, wantSections) {
		t.Errorf("sections = %v, want %v", sections, wantSections)
	}

	doc := "`x.a` and `m.<id>.b`, `x` alone, `socket` is a value, `x.a: 1` is an example\n```yaml\nx:\n  `p.a`\n```\n"
	got := documentedKeyPaths(doc, []string{"x", "m", "p"})
	want := map[string]bool{"x.a": true, "m.<id>.b": true, "x": true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("documented = %v, want %v", got, want)
	}
}
