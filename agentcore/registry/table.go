// Rendering reports for `threadline agents` (text table; JSON via the struct tags).

package registry

import (
	"fmt"
	"strings"
	"text/tabwriter"
)

// Table renders reports as an aligned text table, one row per adapter,
// followed by indented notes: version warnings, problems, missing sign-ins
// and, for missing CLIs, the install hint. It never contains secrets (reports
// hold none). JSON output is json.Marshal(reports).
func Table(reports []Report) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tSTATUS\tVERSION\tFORMAT\tMODELS\tAUTH\tPATH")
	for _, r := range reports {
		version := r.Version
		if version == "" {
			version = "-"
		} else if r.VersionWarning != "" {
			version += " (!)"
		}
		models := "-"
		if len(r.Models) > 0 {
			models = fmt.Sprintf("%d (%s)", len(r.Models), r.ModelSource)
		}
		path := r.Path
		if path == "" {
			path = "-"
		}
		format := string(r.Format)
		if r.Dialect != "" {
			format += "/" + r.Dialect
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Status, version, format, models, r.Auth, path)
	}
	_ = tw.Flush()
	for _, r := range reports {
		var notes []string
		if r.Base != "" {
			notes = append(notes, "profile of "+r.Base)
		}
		if r.VersionWarning != "" {
			notes = append(notes, r.VersionWarning)
		}
		notes = append(notes, r.Problems...)
		if r.Auth == AuthMissing && r.AuthDetail != "" && r.Status != StatusMissing {
			notes = append(notes, "sign-in: "+r.AuthDetail)
		}
		if r.Status == StatusMissing && r.InstallHint != "" {
			notes = append(notes, "install: "+r.InstallHint)
		}
		for _, n := range notes {
			fmt.Fprintf(&b, "  %s: %s\n", r.ID, n)
		}
	}
	return b.String()
}
