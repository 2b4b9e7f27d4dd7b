// Strict keys: a key the schema does not have is an error that names its
// path in the file and the nearest valid key.

package configs

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// checkKeys reports the first key of the mapping n (decoded into t, at
// path) that t does not have, with its line and the nearest valid key.
func checkKeys(n *yaml.Node, t reflect.Type, path []string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind != yaml.MappingNode || reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil // a scalar or sequence: the decoder checks its type
	}
	switch t.Kind() {
	case reflect.Map:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := checkKeys(n.Content[i+1], t.Elem(), append(path, n.Content[i].Value)); err != nil {
				return err
			}
		}
	case reflect.Struct:
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			f, ok := fields[k.Value]
			if !ok {
				return unknownKey(k, path, fields)
			}
			if err := checkKeys(n.Content[i+1], f, append(path, k.Value)); err != nil {
				return err
			}
		}
	}
	return nil
}

var unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()

// yamlFields maps the yaml keys of struct t to their field types.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	return out
}

// unknownKey is the error for key k under path: its full path, and the
// nearest valid key there, else the valid keys.
func unknownKey(k *yaml.Node, path []string, fields map[string]reflect.Type) error {
	where := KeyString(append(path, k.Value))
	best, bestD := "", 0
	var valid []string
	for name := range fields {
		valid = append(valid, name)
		if d := editDistance(strings.ToLower(k.Value), name); best == "" || d < bestD || d == bestD && name < best {
			best, bestD = name, d
		}
	}
	if best != "" && bestD <= max(2, len(k.Value)/3) {
		return fmt.Errorf("line %d: unknown key %s (did you mean %s?)", k.Line, where, KeyString(append(path, best)))
	}
	slices.Sort(valid)
	return fmt.Errorf("line %d: unknown key %s (valid keys here: %s)", k.Line, where, strings.Join(valid, ", "))
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
