// Verification: what a definition was checked against (a real CLI in CI,
// fixtures written from the CLI's docs, or its docs alone).

package registry

import (
	"fmt"
	"strings"
)

// VerifiedBy is the kind of evidence behind a definition.
type VerifiedBy string

// Kinds of verification.
const (
	// VerifiedRealCLI: an end-to-end test runs the real CLI, at each of
	// Definition.VerifiedVersions, against the project's scripted model
	// servers in CI.
	VerifiedRealCLI VerifiedBy = "real-cli"
	// VerifiedFixtures: the provider is tested against fixtures written
	// from the CLI's documentation; Reason says why no real CLI runs.
	VerifiedFixtures VerifiedBy = "fixtures"
	// VerifiedDocs: detection only (no provider runs it); the descriptor
	// follows the CLI's documentation, Reason says why.
	VerifiedDocs VerifiedBy = "docs"
)

// Verification states what verified a definition.
type Verification struct {
	By VerifiedBy
	// Test names the test that checks the definition ("providers/pi
	// TestE2ETool").
	Test string
	// Reason says why a definition has no real-CLI test (required for
	// VerifiedFixtures and VerifiedDocs).
	Reason string
}

// RealCLI is a definition verified by test against the real CLI in CI.
func RealCLI(test string) Verification { return Verification{By: VerifiedRealCLI, Test: test} }

// Fixtures is a definition verified by test against fixtures from the
// CLI's docs, for reason.
func Fixtures(test, reason string) Verification {
	return Verification{By: VerifiedFixtures, Test: test, Reason: reason}
}

// DocsOnly is a detection-only definition written from the CLI's docs, for reason.
func DocsOnly(reason string) Verification { return Verification{By: VerifiedDocs, Reason: reason} }

// VerifiedReport is a definition's verification as `threadline agents`
// shows it.
type VerifiedReport struct {
	By VerifiedBy `json:"by"`
	// How is the one-line statement: "real CLI 1.18.33 in CI", "fixtures
	// from docs", "docs only (detection)" or, for a definition that was not
	// validated as a built-in, "not stated".
	How    string `json:"how"`
	Test   string `json:"test,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// verifiedReport states d's verification.
func verifiedReport(d Definition) VerifiedReport {
	v := d.Verified
	r := VerifiedReport{By: v.By, Test: v.Test, Reason: v.Reason}
	switch v.By {
	case VerifiedRealCLI:
		r.How = fmt.Sprintf("real CLI %s in CI", strings.Join(d.VerifiedVersions, ", "))
	case VerifiedFixtures:
		r.How = "fixtures from docs"
	case VerifiedDocs:
		r.How = "docs only (detection)"
	default:
		r.How = "not stated"
	}
	return r
}

// validateVerified reports what is missing in d.Verified: every built-in
// states it; a real-CLI verification needs a verified version and a test,
// fixtures need a test and a reason, docs a reason.
func validateVerified(d Definition) string {
	v := d.Verified
	switch v.By {
	case "":
		return "Verified is not stated: say what verified the definition (RealCLI, Fixtures or DocsOnly)"
	case VerifiedRealCLI:
		if len(d.VerifiedVersions) == 0 || v.Test == "" {
			return "a real-CLI verification needs VerifiedVersions and the test"
		}
	case VerifiedFixtures:
		if v.Test == "" || v.Reason == "" {
			return "a fixtures verification needs the test and the reason no real CLI runs"
		}
	case VerifiedDocs:
		if v.Reason == "" {
			return "a docs-only definition needs the reason"
		}
	default:
		return fmt.Sprintf("unknown verification %q", v.By)
	}
	return ""
}
