package procrun

import (
	"slices"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

func TestLaunchSpec(t *testing.T) {
	l := Launch{
		Env:     map[string]string{"A": "launch", "B": "launch"},
		HostEnv: func() []string { return []string{"PATH=/bin", "SLACK_BOT_TOKEN=xoxb", "C=host"} },
	}.WithDefaults("tool", time.Second)
	req := agent.RunRequest{Cwd: "/w", Env: map[string]string{"B": "run"}, Container: &agent.ContainerTarget{}}
	s := l.Spec(req, []string{"-x"}, map[string]string{"A": "base", "D": "base"})
	if s.Bin != "tool" || !slices.Equal(s.Args, []string{"-x"}) || s.Dir != "/w" || s.Container != req.Container {
		t.Errorf("spec %+v", s)
	}
	for _, want := range []string{"PATH=/bin", "A=launch", "B=run", "D=base"} {
		if !slices.Contains(s.Env, want) {
			t.Errorf("env %q lacks %s", s.Env, want)
		}
	}
	if slices.Contains(s.Env, "SLACK_BOT_TOKEN=xoxb") {
		t.Errorf("env %q passes the bot's secret", s.Env)
	}
	req.Bin = "/opt/other"
	if s := l.Spec(req, nil, nil); s.Bin != "/opt/other" {
		t.Errorf("RunRequest.Bin not honoured: %q", s.Bin)
	}
	if l.StopGrace != time.Second {
		t.Errorf("StopGrace %s, want the default", l.StopGrace)
	}
	if l := (Launch{Bin: "mine", StopGrace: time.Minute}).WithDefaults("tool", time.Second); l.Bin != "mine" || l.HostEnv == nil || l.StopGrace != time.Minute {
		t.Errorf("WithDefaults %+v", l)
	}
}
