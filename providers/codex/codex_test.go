// Unit tests of the provider's own decisions: identity, environment, hint.

package codex_test

import (
	"slices"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/providers/codex"
	"github.com/threadline-bot/threadline/providers/providertest"
)

func TestIdentity(t *testing.T) {
	p := codex.New(nil, codex.Options{})
	d := codex.Descriptor()
	if p.ID() != "codex" || d.ID != "codex" || d.Executable != codex.DefaultBin || d.InstallHint != "npm install -g @openai/codex" || !slices.Equal(d.VerifiedVersions, []string{"0.169.0"}) {
		t.Errorf("id %q descriptor %+v", p.ID(), d)
	}
	providertest.CheckDescriptor(t, d, registry.VerifiedRealCLI)
	if o := p.Harness().Options(); o.Provider != "codex" || o.Label != "Codex" || o.Bin != "codex" || o.ApprovalPolicy != "untrusted" ||
		!slices.Equal(o.Args, []string{"-c", "tools.update_plan.enabled=true"}) {
		t.Errorf("harness options %+v", o)
	}
}

func TestChildEnv(t *testing.T) {
	host := func() []string {
		return []string{"PATH=/bin", "HOME=/home/u", "OPENAI_API_KEY=sk-host", "CODEX_API_KEY=ck-host", "SLACK_BOT_TOKEN=x", "DATABASE_URL=pg"}
	}
	t.Run("host keys never pass", func(t *testing.T) {
		env := codex.New(nil, codex.Options{Launch: procrun.Launch{HostEnv: host}}).Harness().ChildEnv(nil)
		if !slices.Equal(env, []string{"PATH=/bin", "HOME=/home/u"}) {
			t.Errorf("env %q", env)
		}
	})
	t.Run("an explicitly configured key passes, bot secrets do not", func(t *testing.T) {
		env := codex.New(nil, codex.Options{Launch: procrun.Launch{HostEnv: host, Env: map[string]string{"OPENAI_API_KEY": "sk-conf", "SLACK_APP_TOKEN": "x"}}, CodexHome: "/srv/codex"}).Harness().ChildEnv(map[string]string{"THREADLINE_X": "y"})
		want := []string{"PATH=/bin", "HOME=/home/u", "CODEX_HOME=/srv/codex", "OPENAI_API_KEY=sk-conf"}
		if !slices.Equal(env, want) {
			t.Errorf("env %q, want %q", env, want)
		}
	})
}

func TestNotInstalledNamesTheInstall(t *testing.T) {
	providertest.CheckNotInstalled(t, func(bin string) *codex.Provider {
		return codex.New(nil, codex.Options{Launch: procrun.Launch{Bin: bin}})
	}, "npm install -g @openai/codex")
}
