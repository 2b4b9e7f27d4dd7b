// Process probing on Linux: kill(pid, 0), the process state (a zombie is
// dead) and the process start time from /proc to tell a reused pid from the
// run's owner.

package lifecycle

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

// userHZ is the unit of /proc/<pid>/stat's starttime: USER_HZ, 100 on every
// Linux architecture.
const userHZ = 100

// startSlack absorbs the whole seconds of /proc/stat's btime.
const startSlack = 2 * time.Second

// processAlive reports whether pid is a live process that may be the one last
// seen alive at seen: it exists (kill(pid, 0) is not ESRCH), it is not a
// zombie waiting to be reaped (state Z, or X), and it did not start after
// seen. When /proc/<pid>/stat cannot be read the pid counts as alive.
func processAlive(pid int, seen time.Time) bool {
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false // ESRCH: no such process
	}
	fields, err := statFields(pid)
	if err != nil {
		return true
	}
	if exited(fields) {
		return false
	}
	if seen.IsZero() {
		return true
	}
	started, err := startTime(pid, fields)
	if err != nil {
		return true
	}
	return !started.After(seen.Add(startSlack))
}

// exited reports whether the state field of /proc/<pid>/stat says the process
// has ended: Z (a zombie its parent has not reaped) or X (dead).
func exited(fields [][]byte) bool {
	switch string(fields[0]) {
	case "Z", "X", "x":
		return true
	}
	return false
}

// processStart is when pid started, from /proc/<pid>/stat (field 22, in
// USER_HZ ticks after boot) and /proc/stat's btime.
func processStart(pid int) (time.Time, error) {
	fields, err := statFields(pid)
	if err != nil {
		return time.Time{}, err
	}
	return startTime(pid, fields)
}

// statFields is /proc/<pid>/stat from field 3 (state) onwards; it holds at
// least the state.
func statFields(pid int) ([][]byte, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, err
	}
	// The command (field 2) is in parentheses and may hold spaces and ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, fmt.Errorf("lifecycle: /proc/%d/stat: no command field", pid)
	}
	fields := bytes.Fields(b[i+1:])
	if len(fields) == 0 {
		return nil, fmt.Errorf("lifecycle: /proc/%d/stat: no state field", pid)
	}
	return fields, nil
}

// startTime is the start time in fields (statFields of pid): field 22, in
// USER_HZ ticks after /proc/stat's btime.
func startTime(pid int, fields [][]byte) (time.Time, error) {
	const startField = 22 - 3
	if len(fields) <= startField {
		return time.Time{}, fmt.Errorf("lifecycle: /proc/%d/stat: %d fields", pid, len(fields)+2)
	}
	ticks, err := strconv.ParseInt(string(fields[startField]), 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("lifecycle: /proc/%d/stat starttime: %w", pid, err)
	}
	boot, err := bootTime()
	if err != nil {
		return time.Time{}, err
	}
	return boot.Add(time.Duration(ticks) * time.Second / userHZ), nil
}

// bootTime is /proc/stat's btime.
func bootTime() (time.Time, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, err
	}
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("btime ")); ok {
			s, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("lifecycle: /proc/stat btime: %w", err)
			}
			return time.Unix(s, 0), nil
		}
	}
	return time.Time{}, errors.New("lifecycle: /proc/stat has no btime")
}
