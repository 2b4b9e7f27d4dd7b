package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// DefaultBranchPrefix is the prefix of the chats' branches.
const DefaultBranchPrefix = "threadline/"

// maxSlug is the longest slug of a prompt in a branch name.
const maxSlug = 40

// BranchName is a chat's branch: prefix, the slug of its first prompt (at
// most 40 lowercase ASCII letters, digits and single hyphens) and the first 8
// hex digits of its id, e.g. "threadline/fix-the-login-form-3f2a9c1e". The
// prefix is cleaned to what a ref allows ("" is no prefix); a chat id with
// fewer than 8 hex digits is replaced by a hash of it. The result is a valid
// branch name (git check-ref-format --branch) for any input.
func BranchName(prefix, prompt, chatID string) string {
	slug := slugify(prompt, maxSlug)
	if slug == "" {
		slug = "chat"
	}
	return cleanPrefix(prefix) + slug + "-" + shortID(chatID)
}

// slugify keeps ASCII letters (lowercased) and digits of s, turns every run
// of other characters into one hyphen, trims hyphens and cuts at max bytes.
func slugify(s string, max int) string {
	b := make([]byte, 0, max+1)
	for i := 0; i < len(s) && len(b) < max; i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
			b = append(b, c)
		case 'A' <= c && c <= 'Z':
			b = append(b, c+'a'-'A')
		case len(b) > 0 && b[len(b)-1] != '-':
			b = append(b, '-')
		}
	}
	return strings.Trim(string(b), "-")
}

// shortID is the first 8 hex digits of a chat id (a UUID), lowercased, or
// the first 8 of its SHA-256 when it has fewer.
func shortID(id string) string {
	b := make([]byte, 0, 8)
	for i := 0; i < len(id) && len(b) < 8; i++ {
		switch c := id[i]; {
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f':
			b = append(b, c)
		case 'A' <= c && c <= 'F':
			b = append(b, c+'a'-'A')
		}
	}
	if len(b) == 8 {
		return string(b)
	}
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:4])
}

// cleanPrefix makes prefix a valid start of a branch name: each
// slash-separated part keeps ASCII letters, digits, '.', '_' and '-' (other
// runs become a hyphen) and may not start with '.' or '-', end with '.' or
// ".lock" or hold ".."; empty parts go. A non-empty result ends with '/'.
func cleanPrefix(prefix string) string {
	var parts []string
	for part := range strings.SplitSeq(prefix, "/") {
		if p := cleanPart(part); p != "" {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, "/") + "/"
}

// cleanPart is one part of cleanPrefix.
func cleanPart(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_':
			b = append(b, c)
		case c == '.' && (len(b) == 0 || b[len(b)-1] != '.'):
			b = append(b, c)
		case c != '.' && len(b) > 0 && b[len(b)-1] != '-':
			b = append(b, '-')
		}
	}
	p := strings.TrimLeft(string(b), ".-")
	for {
		trimmed := strings.TrimSuffix(strings.TrimRight(p, "."), ".lock")
		if trimmed == p {
			return p
		}
		p = trimmed
	}
}
