// Tests of ArgRules: declared model and effort lists, free-form ids.

package registry

import (
	"errors"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

func TestArgRulesCheckModel(t *testing.T) {
	t.Parallel()
	closed := ArgRules{Models: []string{"auto", "lite"}}
	open := ArgRules{Models: []string{"sonnet"}, FreeForm: true}
	none := ArgRules{}
	cases := []struct {
		rules   ArgRules
		v       string
		wantErr error
	}{
		{closed, "", nil},
		{closed, "lite", nil},
		{closed, "sonnet", ErrUnknownModel},
		{closed, "--auto", agent.ErrInvalidArgValue},
		{open, "claude-sonnet-4-5-20250929", nil},
		{open, "--auto", agent.ErrInvalidArgValue},
		{open, "a b", agent.ErrInvalidArgValue},
		{none, "x", ErrUnknownModel},
		{none, "", nil},
	}
	for _, c := range cases {
		err := c.rules.CheckModel(c.v)
		if c.wantErr == nil && err != nil || c.wantErr != nil && !errors.Is(err, c.wantErr) {
			t.Errorf("%+v.CheckModel(%q) = %v, want %v", c.rules, c.v, err, c.wantErr)
		}
		if err != nil && !errors.Is(err, agent.ErrInvalidArgValue) {
			t.Errorf("CheckModel(%q) = %v, does not wrap ErrInvalidArgValue", c.v, err)
		}
	}
	if err := closed.CheckModel("sonnet"); err == nil || !strings.Contains(err.Error(), "auto, lite") {
		t.Errorf("closed-list error %v does not name the valid models", err)
	}
}

func TestArgRulesCheckEffort(t *testing.T) {
	t.Parallel()
	listed := ArgRules{Effort: true, Efforts: []string{"low", "high"}}
	free := ArgRules{Effort: true}
	none := ArgRules{}
	for _, c := range []struct {
		rules ArgRules
		v     string
		ok    bool
	}{
		{listed, "high", true}, {listed, "max", false}, {listed, "", true}, {listed, "--auto", false},
		{free, "max", true}, {free, "-x", false}, {none, "high", false}, {none, "", true},
	} {
		if err := c.rules.CheckEffort(c.v); (err == nil) != c.ok {
			t.Errorf("%+v.CheckEffort(%q) = %v, want ok=%v", c.rules, c.v, err, c.ok)
		}
	}
}

// TestBuiltinArgRules: the reports carry the rules of their definition.
func TestBuiltinArgRules(t *testing.T) {
	t.Parallel()
	for _, d := range testBuiltins(t) {
		for _, v := range append(append([]string(nil), d.Models.Fallback...), d.Efforts...) {
			if err := agent.ValidArgValue(v); err != nil {
				t.Errorf("%s declares %q: %v", d.ID, v, err)
			}
		}
		if len(d.Efforts) > 0 && !d.Caps.Effort {
			t.Errorf("%s declares efforts without Caps.Effort", d.ID)
		}
		r := baseReport(d)
		r.Models, r.ModelSource = staticModels(d)
		rules := r.ArgRules()
		if rules.FreeForm != d.Models.FreeForm || rules.Effort != d.Caps.Effort {
			t.Errorf("%s: rules %+v do not follow the definition", d.ID, rules)
		}
		if err := rules.CheckModel("--auto"); !errors.Is(err, agent.ErrInvalidArgValue) {
			t.Errorf("%s accepts model --auto: %v", d.ID, err)
		}
	}
	q := testLookup(t, "qoder")
	qr := baseReport(q)
	qr.Models, _ = staticModels(q)
	if err := qr.ArgRules().CheckModel("gpt-5"); !errors.Is(err, ErrUnknownModel) {
		t.Errorf("qoder (closed tiers) accepts gpt-5: %v", err)
	}
	c := testLookup(t, "claude")
	if err := baseReport(c).ArgRules().CheckEffort("ultra"); !errors.Is(err, ErrUnknownEffort) {
		t.Errorf("claude accepts effort ultra: %v", err)
	}
	// Operator-declared models close the list.
	defs, err := Apply(testBuiltins(t), []Profile{{ID: "claude", Models: []string{"opus"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range defs {
		if d.ID == "claude" {
			r := baseReport(d)
			r.Models, _ = staticModels(d)
			if err := r.ArgRules().CheckModel("sonnet"); !errors.Is(err, ErrUnknownModel) {
				t.Errorf("config models opus: sonnet accepted: %v", err)
			}
		}
	}
}
