package procrun

import (
	"bufio"
	"log/slog"
)

// eachLine is Each over any reader, for tests of the limits.
func eachLine(r *bufio.Reader, max int, logger *slog.Logger, handle func([]byte) error) error {
	return eachLineReport(r, max, logger, handle, lineHooks{})
}
