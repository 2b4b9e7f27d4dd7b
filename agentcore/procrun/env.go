// Environment filtering for agent child processes.

package procrun

import (
	"sort"
	"strings"
)

// allowedKeys are host variables a child inherits by exact name.
var allowedKeys = map[string]bool{
	"PATH":      true,
	"HOME":      true,
	"USER":      true,
	"LOGNAME":   true,
	"SHELL":     true,
	"LANG":      true,
	"LANGUAGE":  true,
	"TZ":        true,
	"TERM":      true,
	"COLORTERM": true,
	"TMPDIR":    true,
}

// ProxyKeys are the standard proxy and CA-bundle variables. They pass from
// the host environment to every agent, so a bot behind a proxy or a private
// CA runs agents that reach their API the same way. A proxy URL may hold a
// password: the bot adds such values to its redaction set.
var ProxyKeys = []string{
	"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy",
	"NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
}

func init() {
	for _, k := range ProxyKeys {
		allowedKeys[k] = true
	}
}

// allowedPrefixes are host variable prefixes a child inherits.
var allowedPrefixes = []string{"LC_", "XDG_"}

// botSecretPrefixes name the bot's own credentials. They never reach a child,
// not even from the agent's configured env.
var botSecretPrefixes = []string{"SLACK_", "MATRIX_", "THREADLINE_"}

// botSecretKeys are exact names of the bot's own credentials.
var botSecretKeys = map[string]bool{"DATABASE_URL": true}

// IsBotSecret reports whether key names one of the bot's own credentials
// (SLACK_*, MATRIX_*, THREADLINE_*, DATABASE_URL). Such keys never reach a child.
func IsBotSecret(key string) bool {
	k := strings.ToUpper(key)
	if botSecretKeys[k] {
		return true
	}
	for _, p := range botSecretPrefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// IsHostAllowed reports whether a host variable of this name is inherited by
// every child. Only a fixed allow-list passes (PATH, HOME, USER, LOGNAME,
// SHELL, LANG, LANGUAGE, LC_*, TZ, TERM, COLORTERM, TMPDIR, XDG_*, and the
// proxy and CA variables of ProxyKeys); tokens and keys do not: an agent's own
// credential variables reach that agent only, through HostPass.
func IsHostAllowed(key string) bool {
	if IsBotSecret(key) {
		return false
	}
	if allowedKeys[key] {
		return true
	}
	for _, p := range allowedPrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// Environ builds a child's full KEY=VALUE list.
//
// From base (normally os.Environ()) only the allow-listed variables pass (see
// IsHostAllowed). extra is the operator's explicit env for the agent and wins
// over base; because the operator configured it, an entry such as
// ANTHROPIC_API_KEY or GH_TOKEN passes even though a host *_TOKEN never would.
// Two things never pass, from either source: the bot's own credentials (see
// IsBotSecret) and any key for which secret returns true (the bot reports the
// names its config expanded secrets from). secret may be nil.
//
// The result is deterministic: the surviving base entries in base order, then
// extra sorted by key. Entries without '=' and empty keys are dropped.
func Environ(base []string, extra map[string]string, secret func(key string) bool) []string {
	blocked := func(k string) bool {
		return k == "" || IsBotSecret(k) || (secret != nil && secret(k))
	}
	out := make([]string, 0, len(base)+len(extra))
	for _, kv := range base {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || blocked(k) || !IsHostAllowed(k) {
			continue
		}
		if _, over := extra[k]; over {
			continue
		}
		out = append(out, kv)
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		if blocked(k) || strings.ContainsAny(k, "=\x00") {
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+extra[k])
	}
	return out
}

// HostPass picks the named variables out of base (normally os.Environ()):
// the host variables one agent is given besides the allow-list, i.e. its
// descriptor's credential variables and the operator's pass_env (see
// registry.Definition.HostEnvNames). The bot's own credentials (IsBotSecret)
// never pass, even when named, nor any key for which blocked returns true
// (the bot reports variables its config expanded a secret from); blocked may
// be nil. Unset and empty variables are left out. The result is the extra
// of Environ, under the operator's configured env (which wins).
func HostPass(base []string, names []string, blocked func(key string) bool) map[string]string {
	want := make(map[string]bool, len(names))
	for _, n := range names {
		if n != "" && !IsBotSecret(n) && (blocked == nil || !blocked(n)) {
			want[n] = true
		}
	}
	out := map[string]string{}
	for _, kv := range base {
		k, v, ok := strings.Cut(kv, "=")
		if ok && v != "" && want[k] && !strings.ContainsRune(v, 0) {
			out[k] = v
		}
	}
	return out
}
