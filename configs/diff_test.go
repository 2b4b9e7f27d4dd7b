package configs

import (
	"slices"
	"testing"
)

// TestConfigDiffKeys: keys, not values, and map keys with dots quoted.
func TestConfigDiffKeys(t *testing.T) {
	a := &Config{Matrix: &MatrixConfig{Rooms: map[string]ChannelConfig{"!r:example.org": {Allow: []string{"@a:x"}}}}, Agents: map[string]AgentConfig{}}
	b := &Config{Matrix: &MatrixConfig{Rooms: map[string]ChannelConfig{"!r:example.org": {Allow: []string{"@b:x"}}, "!s:x": {}}}}
	var got []string
	for _, k := range Diff(a, b) {
		got = append(got, KeyString(k))
		if !Reloadable(k) {
			t.Errorf("%v is not reloadable", k)
		}
	}
	want := []string{`matrix.rooms["!r:example.org"].allow`, "matrix.rooms.!s:x"}
	if !slices.Equal(got, want) {
		t.Errorf("diff %q, want %q", got, want)
	}
	if d := Diff(a, a); len(d) != 0 {
		t.Errorf("a config differs from itself: %v", d)
	}
}
