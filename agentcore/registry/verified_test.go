// Verification: Validate's rules for Definition.Verified and the statement
// a report carries.

package registry

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestValidateVerified(t *testing.T) {
	for name, tc := range map[string]struct {
		id   string
		v    Verification
		want string // "" accepts
	}{
		"real cli":            {"claude", RealCLI("providers/claude TestE2EResume"), ""},
		"real cli no version": {"codex", RealCLI("providers/codex TestE2EApprove"), "needs VerifiedVersions"},
		"real cli no test":    {"claude", RealCLI(""), "needs VerifiedVersions and the test"},
		"fixtures":            {"qoder", Fixtures("providers/jsonstream TestQoder", "needs a Qoder login"), ""},
		"fixtures no reason":  {"qoder", Fixtures("providers/jsonstream TestQoder", ""), "reason"},
		"fixtures no test":    {"qoder", Fixtures("", "needs a Qoder login"), "the test"},
		"docs":                {"qoder", DocsOnly("its backend only"), ""},
		"docs no reason":      {"qoder", DocsOnly(""), "needs the reason"},
		"unknown kind":        {"qoder", Verification{By: "hearsay", Reason: "x"}, "unknown verification"},
		"reason without kind": {"qoder", Verification{Reason: "x"}, "not stated"},
		"not stated":          {"qoder", Verification{}, "not stated"},
	} {
		t.Run(name, func(t *testing.T) {
			d := testLookup(t, tc.id)
			d.Verified = tc.v
			err := Validate(d)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate = %v, want nil", err)
			case tc.want != "" && (!errors.Is(err, ErrInvalidDefinition) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate = %v, want ErrInvalidDefinition mentioning %q", err, tc.want)
			}
		})
	}
}

// TestReportStatesVerification: every report, of a missing CLI too, says
// what verified its definition, and the JSON carries it under "verified".
func TestReportStatesVerification(t *testing.T) {
	claude := testLookup(t, "claude")
	claude.Verified = RealCLI("providers/claude TestE2EResume")
	qoder := testLookup(t, "qoder")
	qoder.Verified = Fixtures("providers/jsonstream TestQoder", "needs a Qoder login")
	amp := testLookup(t, "mimo")
	amp.Verified = DocsOnly("its server only")
	bare := testLookup(t, "codex")
	bare.Verified = Verification{} // a definition Validate never saw (Probe takes any)
	opts := testOpts(t.TempDir())  // nothing on PATH: every CLI is missing
	reports := Probe(t.Context(), []Definition{claude, qoder, amp, bare}, opts)
	want := []VerifiedReport{
		{By: VerifiedRealCLI, How: "real CLI 2.1.328 in CI", Test: "providers/claude TestE2EResume"},
		{By: VerifiedFixtures, How: "fixtures from docs", Test: "providers/jsonstream TestQoder", Reason: "needs a Qoder login"},
		{By: VerifiedDocs, How: "docs only (detection)", Reason: "its server only"},
		{How: "not stated"},
	}
	for i, r := range reports {
		if r.Status != StatusMissing {
			t.Errorf("%s: status %s, want missing", r.ID, r.Status)
		}
		if r.Verified != want[i] {
			t.Errorf("%s: verified = %+v, want %+v", r.ID, r.Verified, want[i])
		}
	}
	b, err := json.Marshal(reports[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"verified":{"by":"real-cli","how":"real CLI 2.1.328 in CI","test":"providers/claude TestE2EResume"}`) {
		t.Errorf("JSON lacks the verification: %s", b)
	}
}
