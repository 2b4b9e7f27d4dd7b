package shipgate_test

import (
	"strings"
)

// The fixtures are built from pieces so that this source holds no string of
// a secret's shape: the gate run over this repository finds nothing here,
// and no forge's push protection stops it.

// rnd returns n deterministic base62 characters (a secret's random part).
func rnd(n int, seed uint32) string {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	var b strings.Builder
	x := seed*2654435761 + 12345
	for range n {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b.WriteByte(alphabet[x%62])
	}
	return b.String()
}

var (
	fakeGitHub       = "gh" + "p_" + rnd(36, 1)
	fakeGitHubApp    = "gh" + "s_" + rnd(36, 2)
	fakeGitHubPAT    = "github" + "_pat_" + rnd(22, 3) + "_" + rnd(59, 4)
	fakeAWS          = "AK" + "IA" + strings.ToUpper(rnd(16, 5))
	fakeAWSSession   = "AS" + "IA" + strings.ToUpper(rnd(16, 6))
	fakeSlackBot     = "xo" + "xb-" + "1234567890123-4567890123456-" + rnd(24, 7)
	fakeSlackUser    = "xo" + "xp-" + "1234567890-1234567890-1234567890-" + strings.ToLower(rnd(32, 8))
	fakeSlackApp     = "xa" + "pp-1-A0" + strings.ToUpper(rnd(9, 9)) + "-1234567890123-" + strings.ToLower(rnd(64, 10))
	fakeAnthropic    = "sk" + "-ant-api03-" + rnd(93, 11) + "AA"
	fakeOpenAI       = "sk" + "-proj-" + rnd(48, 12)
	fakeOpenAIOld    = "sk" + "-" + rnd(48, 13)
	fakePEMHeader    = "-----BEGIN " + "RSA PRIVATE " + "KEY-----"
	fakePEM          = fakePEMHeader + "\n" + rnd(64, 14) + "\n" + rnd(64, 15) + "\n-----END RSA PRIVATE KEY-----\n"
	fakeOpenSSH      = "-----BEGIN " + "OPENSSH PRIVATE " + "KEY-----\n" + rnd(70, 16) + "\n-----END OPENSSH PRIVATE KEY-----\n"
	fakeEncryptedRSA = "-----BEGIN " + "RSA PRIVATE " + "KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0123456789ABCDEF\n\n" + rnd(64, 17) + "\n"

	// configured secrets (bot tokens, project secrets) of the tests
	botToken      = "bot-token-" + rnd(20, 20)
	projectSecret = "p4ss-" + rnd(12, 21)
)
