package shipgate

import (
	"regexp"
	"slices"
	"strings"
)

// Rule names what a finding broke: RuleSecretValue, RuleSizeLimit,
// RuleUnknownSize, or the Rule of a Pattern.
type Rule string

// The rules that are not patterns.
const (
	RuleSecretValue Rule = "secret-value"
	RuleSizeLimit   Rule = "size-limit"
	RuleUnknownSize Rule = "unknown-size"
)

// Pattern is a shape of secret recognised without knowing its value.
type Pattern struct {
	// Rule is the pattern's name in findings ("github-token").
	Rule Rule
	// Description says what a match is, in plain words ("a GitHub token").
	Description string
	// Regexp matches the secret (for a private key: its header and the
	// start of its body).
	Regexp *regexp.Regexp
	// Keywords are literal strings of which every match holds one: text
	// holding none of them cannot match, and the Regexp is not run on it.
	Keywords []string
	// Valid, when set, must accept a match for it to count: it weeds out
	// placeholders and ordinary words of the same shape.
	Valid func(match string) bool
}

// patterns is the table behind Patterns. Where two patterns match at the same
// place, the earlier one is reported (an Anthropic key is no OpenAI key).
var patterns = []Pattern{
	{
		Rule:        "private-key",
		Description: "a private key",
		// The header, optional RFC 1421 headers (Proc-Type, DEK-Info), then
		// base64: a constant holding only the header line is no key.
		Regexp:   regexp.MustCompile(`-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----\r?\n(?:[A-Za-z-]+: [^\n]*\r?\n)*(?:\r?\n)?[A-Za-z0-9+/=]{16,}`),
		Keywords: []string{"PRIVATE KEY"},
	},
	{
		Rule:        "aws-access-key",
		Description: "an AWS access key id",
		Regexp:      regexp.MustCompile(`\b(?:AKIA|ASIA)[A-Z0-9]{16}\b`),
		Keywords:    []string{"AKIA", "ASIA"},
		// AWS's documentation examples end in EXAMPLE.
		Valid: func(m string) bool { return !strings.HasSuffix(m, "EXAMPLE") },
	},
	{
		Rule:        "github-token",
		Description: "a GitHub token",
		// Personal (ghp_), OAuth (gho_), user-to-server (ghu_),
		// server-to-server (ghs_) and refresh (ghr_) tokens: 36 base62 chars.
		Regexp:   regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{36}\b`),
		Keywords: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"},
		Valid:    func(m string) bool { return !placeholder(m[4:]) },
	},
	{
		Rule:        "github-fine-grained-token",
		Description: "a GitHub fine-grained personal access token",
		Regexp:      regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}\b`),
		Keywords:    []string{"github_pat_"},
		Valid:       func(m string) bool { return !placeholder(m[len("github_pat_"):]) },
	},
	{
		Rule:        "slack-token",
		Description: "a Slack token",
		// xoxb- (bot), xoxp- (user), xoxa- (workspace): digits, then more.
		Regexp:   regexp.MustCompile(`\bxox[abp]-[0-9]+-[0-9A-Za-z-]{8,}`),
		Keywords: []string{"xoxa-", "xoxb-", "xoxp-"},
		Valid:    func(m string) bool { return !placeholder(m[5:]) },
	},
	{
		Rule:        "slack-app-token",
		Description: "a Slack app-level token",
		Regexp:      regexp.MustCompile(`\bxapp-[0-9]+-[A-Z0-9]+-[0-9]+-[a-z0-9]{16,}\b`),
		Keywords:    []string{"xapp-"},
	},
	{
		Rule:        "anthropic-api-key",
		Description: "an Anthropic API key",
		// sk-ant-api03-…, sk-ant-admin01-…, sk-ant-oat01-…
		Regexp:   regexp.MustCompile(`\bsk-ant-[a-z]+[0-9]*-[A-Za-z0-9_-]{20,}`),
		Keywords: []string{"sk-ant-"},
		Valid: func(m string) bool {
			rest := m[len("sk-ant-"):]
			return random(rest[strings.IndexByte(rest, '-')+1:])
		},
	},
	{
		Rule:        "openai-api-key",
		Description: "an OpenAI API key",
		// sk-…, sk-proj-…, sk-svcacct-…, sk-admin-…: random text, so it holds
		// upper and lower case letters and digits ("sk-my-long-css-class-name"
		// does not).
		Regexp:   regexp.MustCompile(`\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}`),
		Keywords: []string{"sk-"},
		Valid:    func(m string) bool { return random(m[3:]) },
	},
}

// Patterns returns the pattern table (a copy: the push gate, the send_file
// gate and the redactor share it, and none may change it for the others).
func Patterns() []Pattern { return slices.Clone(patterns) }

// placeholder reports whether s looks like a stand-in rather than a random
// secret: fewer than six distinct bytes ("xxxx…", "0000…", "abcabc…").
func placeholder(s string) bool {
	var seen [256]bool
	n := 0
	for i := 0; i < len(s); i++ {
		if !seen[s[i]] {
			seen[s[i]] = true
			if n++; n >= 6 {
				return false
			}
		}
	}
	return true
}

// random reports whether s reads like a random key: upper and lower case
// letters and digits, and not a placeholder.
func random(s string) bool {
	var up, low, dig bool
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'A' && c <= 'Z':
			up = true
		case c >= 'a' && c <= 'z':
			low = true
		case c >= '0' && c <= '9':
			dig = true
		}
	}
	return up && low && dig && !placeholder(s)
}

// match is one accepted pattern match in a text: [start, end).
type match struct {
	start, end int
	p          *Pattern
}

// findPatterns returns the accepted matches of ps in text, by start, without
// overlaps (the earlier pattern of the table wins).
func findPatterns(text string, ps []Pattern) []match {
	var out []match
	for i := range ps {
		p := &ps[i]
		if !containsAny(text, p.Keywords) {
			continue
		}
		for _, loc := range p.Regexp.FindAllStringIndex(text, -1) {
			m := text[loc[0]:loc[1]]
			if p.Valid != nil && !p.Valid(m) {
				continue
			}
			if overlaps(out, loc[0], loc[1]) {
				continue
			}
			out = append(out, match{loc[0], loc[1], p})
		}
	}
	slices.SortFunc(out, func(a, b match) int { return a.start - b.start })
	return out
}

func containsAny(s string, keywords []string) bool {
	if len(keywords) == 0 {
		return true
	}
	for _, k := range keywords {
		if strings.Contains(s, k) {
			return true
		}
	}
	return false
}

func overlaps(ms []match, start, end int) bool {
	for _, m := range ms {
		if start < m.end && m.start < end {
			return true
		}
	}
	return false
}
