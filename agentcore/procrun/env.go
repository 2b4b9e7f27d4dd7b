// Environment filtering for agent child processes.

package procrun

import (
	"sort"
	"strings"
)

// allowedKeys are host variables a child inherits by exact name.
var allowedKeys = map[string]bool{
	"PATH":          true,
	"HOME":          true,
	"USER":          true,
	"LOGNAME":       true,
	"SHELL":         true,
	"LANG":          true,
	"LANGUAGE":      true,
	"TZ":            true,
	"TERM":          true,
	"COLORTERM":     true,
	"TMPDIR":        true,
	"SSL_CERT_FILE": true,
	"SSL_CERT_DIR":  true,
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
// children. Only a fixed allow-list passes (PATH, HOME, USER, LOGNAME, SHELL,
// LANG, LANGUAGE, LC_*, TZ, TERM, COLORTERM, TMPDIR, XDG_*, SSL_CERT_FILE,
// SSL_CERT_DIR); proxies, tokens and keys do not.
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
