package shipgate_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/shipgate"
)

// rulesOf returns the rules Check finds in text added as a new file.
func rulesOf(text string) []shipgate.Rule {
	var rules []shipgate.Rule
	for _, f := range shipgate.Check([]shipgate.File{shipgate.NewFile("x.txt", []byte(text))}, shipgate.Options{}) {
		rules = append(rules, f.Rule)
	}
	return rules
}

func TestPatterns(t *testing.T) {
	for _, tc := range []struct {
		name string
		text string
		want []shipgate.Rule // nil: a near miss, no finding
	}{
		{"rsa private key", fakePEM, []shipgate.Rule{"private-key"}},
		{"openssh private key", fakeOpenSSH, []shipgate.Rule{"private-key"}},
		{"encrypted pem with headers", fakeEncryptedRSA, []shipgate.Rule{"private-key"}},
		{"pkcs8 private key", "-----BEGIN " + "PRIVATE KEY-----\r\n" + rnd(64, 30) + "\r\n", []shipgate.Rule{"private-key"}},
		{"pgp private key block", "-----BEGIN PGP " + "PRIVATE KEY BLOCK-----\n\n" + rnd(64, 31) + "\n", []shipgate.Rule{"private-key"}},
		{"near: public key", "-----BEGIN " + "PUBLIC KEY-----\n" + rnd(64, 32) + "\n", nil},
		{"near: certificate", "-----BEGIN " + "CERTIFICATE-----\n" + rnd(64, 33) + "\n", nil},
		{"near: header constant in code", "const header = \"" + fakePEMHeader + "\"\nreturn header\n", nil},
		{"near: header then prose", fakePEMHeader + "\nis what a key file starts with.\n", nil},

		{"aws access key", "aws_access_key_id = " + fakeAWS + "\n", []shipgate.Rule{"aws-access-key"}},
		{"aws session key", "id: " + fakeAWSSession, []shipgate.Rule{"aws-access-key"}},
		{"near: aws docs example", "AK" + "IAIOSFODNN7EXAMPLE", nil},
		{"near: aws 15 chars", fakeAWS[:19], nil},
		{"near: aws 17 chars", fakeAWS + "Q", nil},
		{"near: aws lower case", strings.ToLower(fakeAWS), nil},
		{"near: aws inside a word", "X" + fakeAWS, nil},

		{"github personal token", "token: " + fakeGitHub, []shipgate.Rule{"github-token"}},
		{"github app token", "GITHUB_TOKEN=" + fakeGitHubApp + "\n", []shipgate.Rule{"github-token"}},
		{"github oauth token", "gh" + "o_" + rnd(36, 34), []shipgate.Rule{"github-token"}},
		{"github fine-grained token", "pat=" + fakeGitHubPAT, []shipgate.Rule{"github-fine-grained-token"}},
		{"near: github 35 chars", fakeGitHub[:39], nil},
		{"near: github placeholder", "gh" + "p_" + strings.Repeat("x", 36), nil},
		{"near: github other prefix", "gh" + "x_" + rnd(36, 35), nil},
		{"near: github pat placeholder", "github" + "_pat_" + strings.Repeat("X", 22) + "_" + strings.Repeat("X", 59), nil},

		{"slack bot token", "SLACK_BOT_TOKEN=" + fakeSlackBot, []shipgate.Rule{"slack-token"}},
		{"slack user token", fakeSlackUser, []shipgate.Rule{"slack-token"}},
		{"slack app token", "app_token: " + fakeSlackApp, []shipgate.Rule{"slack-app-token"}},
		{"near: slack placeholder", "xo" + "xb-your-bot-token-here", nil},
		{"near: slack bare prefix", "tokens start with xo" + "xb-", nil},
		{"near: slack other kind", "xo" + "xc-1234567890-" + rnd(24, 36), nil},
		{"near: slack app placeholder", "xa" + "pp-1-A0000-0000-xxxx", nil},

		{"anthropic key", "ANTHROPIC_API_KEY=" + fakeAnthropic, []shipgate.Rule{"anthropic-api-key"}},
		{"anthropic admin key", "sk" + "-ant-admin01-" + rnd(90, 37), []shipgate.Rule{"anthropic-api-key"}},
		{"openai project key", "OPENAI_API_KEY=\"" + fakeOpenAI + "\"", []shipgate.Rule{"openai-api-key"}},
		{"openai legacy key", fakeOpenAIOld, []shipgate.Rule{"openai-api-key"}},
		{"near: anthropic placeholder", "sk" + "-ant-api03-" + strings.Repeat("x", 40), nil},
		{"near: sk in a word", "ta" + "sk-" + rnd(30, 38), nil},
		{"near: sk hyphenated name", "class=\"sk" + "-spinner-fading-circle-animation\"", nil},
		{"near: sk short", "sk" + "-learn", nil},
		{"near: sk placeholder", "sk" + "-your-openai-api-key-goes-here", nil},

		{"two in one line", fakeGitHub + " " + fakeAWS, []shipgate.Rule{"aws-access-key", "github-token"}},
		{"ordinary code", "func main() {\n\tfmt.Println(\"hello\")\n}\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := rulesOf(tc.text)
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("rules %v, want %v (text %q)", got, tc.want, tc.text)
			}
		})
	}
}

// TestPatternsTable: every rule is named once, described, and has keywords
// its matches hold; Patterns is a copy.
func TestPatternsTable(t *testing.T) {
	ps := shipgate.Patterns()
	seen := map[shipgate.Rule]bool{}
	for _, p := range ps {
		if p.Rule == "" || p.Description == "" || p.Regexp == nil || len(p.Keywords) == 0 || seen[p.Rule] {
			t.Errorf("pattern %+v", p)
		}
		seen[p.Rule] = true
	}
	for _, secret := range []string{fakeGitHub, fakeGitHubPAT, fakeAWS, fakeSlackBot, fakeSlackApp, fakeAnthropic, fakeOpenAI, fakePEM} {
		hit := false
		for _, p := range ps {
			if loc := p.Regexp.FindStringIndex(secret); loc != nil {
				hit = true
				kw := false
				for _, k := range p.Keywords {
					kw = kw || strings.Contains(secret[loc[0]:loc[1]], k)
				}
				if !kw {
					t.Errorf("%s matches %q, which holds none of its keywords", p.Rule, secret)
				}
			}
		}
		if !hit {
			t.Errorf("no pattern matches %q", secret)
		}
	}
	ps[0].Rule = "changed"
	if shipgate.Patterns()[0].Rule == "changed" {
		t.Error("Patterns returned the table itself")
	}
}
