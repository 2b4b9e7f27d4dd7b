// The start of a fake CLI that is the test binary itself, re-executed by
// the provider under test (its TestMain calls ServeFake when the package's
// fake variable is set).

package providertest

import (
	"fmt"
	"os"
	"slices"
)

// ServeFake is the body of a fake CLI: started with --version it prints
// version and exits 0 (unless version is empty: a CLI without that probe);
// otherwise it opens the record file recordPath (OpenRecord: argv and
// environment first) and returns serve's exit code, serve writing every
// stdin line it reads to rec (see RecordLines). It returns 98 when the
// record cannot be opened.
func ServeFake(version, recordPath string, serve func(rec *os.File) int) int {
	if version != "" && slices.Contains(os.Args[1:], "--version") {
		fmt.Println(version)
		return 0
	}
	rec, err := OpenRecord(recordPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 98
	}
	defer rec.Close()
	return serve(rec)
}
