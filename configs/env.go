// The bot's own environment: which variables the config took secrets from,
// and which names agents.<id>.pass_env may list.

package configs

import (
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"

	"github.com/threadline-bot/threadline/agentcore/procrun"
)

// envRefsOf lists the variables a raw config references as ${VAR}.
func envRefsOf(raw []byte) []string {
	var out []string
	for _, m := range envRef.FindAllSubmatch(raw, -1) {
		out = append(out, string(m[1]))
	}
	return out
}

// kept holds the values UnsetSecretEnv took out of the environment: a
// reload (SIGHUP) expands the same ${VAR} to the value of the start, which
// no child process can inherit from the environment any more.
var kept struct {
	mu sync.Mutex
	m  map[string]string
}

// lookupEnv is os.LookupEnv, then the values UnsetSecretEnv kept.
func lookupEnv(name string) (string, bool) {
	if v, ok := os.LookupEnv(name); ok {
		return v, true
	}
	kept.mu.Lock()
	defer kept.mu.Unlock()
	v, ok := kept.m[name]
	return v, ok
}

// UnsetSecretEnv removes from this process's environment every variable the
// config took a secret from (its value holds a configured secret), so that
// the bot does not keep them in its environment once the config is loaded
// (no child inherits them); their values are kept in memory for a reload
// of the same file. The initial environment block of /proc/<pid>/environ
// still shows them: the process being non-dumpable is what keeps other
// processes from reading it.
func (c *Config) UnsetSecretEnv() {
	secrets := c.Secrets()
	for _, name := range c.envRefs {
		v, ok := os.LookupEnv(name)
		if !ok {
			continue
		}
		for _, s := range secrets {
			if len(s) >= 4 && strings.Contains(v, s) {
				kept.mu.Lock()
				if kept.m == nil {
					kept.m = map[string]string{}
				}
				kept.m[name] = v
				kept.mu.Unlock()
				_ = os.Unsetenv(name)
				break
			}
		}
	}
}

// passEnvName is a variable name pass_env may list.
var passEnvName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// validPassEnv refuses a name that is no variable name, and a bot secret
// (SLACK_*, MATRIX_*, THREADLINE_*, DATABASE_URL), which never passes.
func validPassEnv(names []string) error {
	for _, n := range names {
		switch {
		case !passEnvName.MatchString(n):
			return fmt.Errorf("%q is not a variable name", n)
		case procrun.IsBotSecret(n):
			return fmt.Errorf("%s is one of the bot's own credentials and never passes to an agent", n)
		}
	}
	return nil
}

// SecretSources reports the host variables the config took a bot secret
// from (a value that holds the database URL or password, or a Slack or
// Matrix token or password): they never pass to an agent, whatever names it.
func (c *Config) SecretSources(host []string) func(string) bool {
	var bot []string
	if u, err := url.Parse(c.Database.URL); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok {
			bot = append(bot, pw)
		}
	}
	if strings.Contains(c.Database.URL, "://") {
		bot = append(bot, c.Database.URL)
	}
	if c.Slack != nil {
		bot = append(bot, c.Slack.AppToken, c.Slack.BotToken, c.Slack.SigningSecret)
	}
	if c.Matrix != nil {
		bot = append(bot, c.Matrix.AccessToken, c.Matrix.Password)
	}
	from := map[string]bool{}
	for _, kv := range host {
		k, v, _ := strings.Cut(kv, "=")
		for _, s := range bot {
			if len(s) >= 4 && strings.Contains(v, s) {
				from[k] = true
				break
			}
		}
	}
	return func(k string) bool { return from[k] }
}
