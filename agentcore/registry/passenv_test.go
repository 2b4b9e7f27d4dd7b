// Tests of the host variables a definition passes: HostEnvNames, pass_env
// profiles, validation.

package registry

import (
	"errors"
	"slices"
	"testing"
)

func TestHostEnvNames(t *testing.T) {
	t.Parallel()
	d := Definition{Auth: AuthCheck{Env: []string{"A_KEY", "B_TOKEN"}}, PassEnv: []string{"A_BASE_URL", "A_KEY"}}
	if got, want := d.HostEnvNames(), []string{"A_KEY", "B_TOKEN", "A_BASE_URL"}; !slices.Equal(got, want) {
		t.Errorf("HostEnvNames = %q, want %q", got, want)
	}
	if got := (Definition{}).HostEnvNames(); len(got) != 0 {
		t.Errorf("empty definition passes %q", got)
	}
}

func TestProfilePassEnv(t *testing.T) {
	t.Parallel()
	base := Definition{ID: "claude", Name: "C", Executable: "claude", PassEnv: []string{"ANTHROPIC_BASE_URL"}}
	defs, err := Apply([]Definition{base}, []Profile{
		{ID: "claude", PassEnv: []string{"AWS_PROFILE"}},
		{ID: "bedrock", Base: "claude", PassEnv: []string{"AWS_REGION"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, d := range defs {
		got[d.ID] = d.PassEnv
	}
	if want := []string{"ANTHROPIC_BASE_URL", "AWS_PROFILE"}; !slices.Equal(got["claude"], want) {
		t.Errorf("claude override: %q, want %q", got["claude"], want)
	}
	// The profile is copied from the built-in as given, then its own names.
	if want := []string{"ANTHROPIC_BASE_URL", "AWS_REGION"}; !slices.Equal(got["bedrock"], want) {
		t.Errorf("bedrock profile: %q, want %q", got["bedrock"], want)
	}
	if !slices.Equal(base.PassEnv, []string{"ANTHROPIC_BASE_URL"}) {
		t.Errorf("Apply changed its input: %q", base.PassEnv)
	}
}

func TestValidateRefusesBadPassEnv(t *testing.T) {
	t.Parallel()
	d := testLookup(t, "claude")
	d.PassEnv = []string{"lower-case"}
	if err := Validate(d); !errors.Is(err, ErrInvalidDefinition) {
		t.Errorf("Validate(pass env %q) = %v", d.PassEnv, err)
	}
}
