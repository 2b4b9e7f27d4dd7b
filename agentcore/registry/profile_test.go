// Local profiles and overrides.

package registry

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func find(t *testing.T, defs []Definition, id string) Definition {
	t.Helper()
	for _, d := range defs {
		if d.ID == id {
			return d
		}
	}
	t.Fatalf("no definition %q", id)
	return Definition{}
}

func TestApplyProfileInheritsBase(t *testing.T) {
	base := testBuiltins(t)
	defs, err := Apply(base, []Profile{{
		ID: "my-opencode", Base: "opencode", Bin: "/opt/oc/bin/opencode",
		Args: []string{"--agent", "plan"}, Env: map[string]string{"K": "V"}, Models: []string{"fake/model"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(defs) != len(base)+1 {
		t.Fatalf("got %d definitions, want %d", len(defs), len(base)+1)
	}
	p := find(t, defs, "my-opencode")
	oc := find(t, defs, "opencode")
	if p.Base != "opencode" || p.Bin != "/opt/oc/bin/opencode" || p.Format != oc.Format || p.Dialect != oc.Dialect || p.Executable != oc.Executable {
		t.Errorf("profile = %+v", p)
	}
	if !slices.Equal(p.Args.Extra, []string{"--agent", "plan"}) || !slices.Equal(p.Args.Base, oc.Args.Base) {
		t.Errorf("profile args = %+v", p.Args)
	}
	if p.Env["K"] != "V" || !slices.Equal(p.ConfigModels, []string{"fake/model"}) {
		t.Errorf("profile env/models = %v %v", p.Env, p.ConfigModels)
	}
	if !slices.Equal(p.Candidates(), []string{"/opt/oc/bin/opencode"}) {
		t.Errorf("profile candidates = %q", p.Candidates())
	}
	if oc.Bin != "" || len(oc.Args.Extra) != 0 || oc.Env["K"] != "" {
		t.Errorf("the base was changed: %+v", oc)
	}
	if !strings.Contains(p.Name, "OpenCode") || !strings.Contains(p.Name, "my-opencode") {
		t.Errorf("profile name %q", p.Name)
	}
}

func TestApplyOverrideChangesBuiltin(t *testing.T) {
	defs, err := Apply(testBuiltins(t), []Profile{{ID: "claude", Bin: "/usr/local/bin/claude", Env: map[string]string{"ANTHROPIC_API_KEY": "x"}}})
	if err != nil {
		t.Fatal(err)
	}
	c := find(t, defs, "claude")
	if c.Bin != "/usr/local/bin/claude" || c.Base != "" || c.Env["ANTHROPIC_API_KEY"] != "x" {
		t.Errorf("override = %+v", c)
	}
	if len(defs) != len(testBuiltins(t)) {
		t.Error("an override added a definition")
	}
}

func TestApplyErrors(t *testing.T) {
	known := "claude, codex, mimo, opencode, qoder"
	for _, tc := range []struct {
		name    string
		p       Profile
		want    string
		wantErr error
	}{
		{"replace builtin", Profile{ID: "claude", Base: "opencode"},
			"agents.claude: a profile cannot replace the built-in agent claude", ErrReplacesBuiltin},
		{"unknown base", Profile{ID: "mine", Base: "nosuch"},
			`agents.mine: unknown agent "nosuch" (known: ` + known + ")", ErrUnknownBase},
		{"unknown id without base", Profile{ID: "mine"},
			`agents.mine: unknown agent "mine" (known: ` + known + ")", ErrUnknownBase},
		{"base is itself", Profile{ID: "mine", Base: "mine"},
			"agents.mine: base must name another agent", ErrInvalidProfile},
		{"empty id", Profile{Base: "claude"}, "agents: an agent id is empty", ErrInvalidProfile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Apply(testBuiltins(t), []Profile{tc.p})
			if err == nil || err.Error() != tc.want {
				t.Fatalf("err = %v\nwant %s", err, tc.want)
			}
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("err does not wrap %v", tc.wantErr)
			}
		})
	}
}

func TestApplyProfileOfProfileRejected(t *testing.T) {
	_, err := Apply(testBuiltins(t), []Profile{{ID: "a-oc", Base: "opencode"}, {ID: "b-oc", Base: "a-oc"}})
	if !errors.Is(err, ErrUnknownBase) || !strings.HasPrefix(err.Error(), `agents.b-oc: unknown agent "a-oc"`) {
		t.Fatalf("err = %v", err)
	}
	_, err = Apply(testBuiltins(t), []Profile{{ID: "x", Base: "claude"}, {ID: "x", Base: "codex"}})
	if !errors.Is(err, ErrInvalidProfile) {
		t.Fatalf("duplicate id: err = %v", err)
	}
}
