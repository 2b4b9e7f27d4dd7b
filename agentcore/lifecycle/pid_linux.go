// Process probing on Linux: kill(pid, 0), and the process start time from
// /proc to tell a reused pid from the run's owner.

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
// seen alive at seen: it exists (kill(pid, 0) is not ESRCH) and did not start
// after seen. When the start time cannot be read the pid counts as alive.
func processAlive(pid int, seen time.Time) bool {
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false // ESRCH: no such process
	}
	if seen.IsZero() {
		return true
	}
	started, err := processStart(pid)
	if err != nil {
		return true
	}
	return !started.After(seen.Add(startSlack))
}

// processStart is when pid started, from /proc/<pid>/stat (field 22, in
// USER_HZ ticks after boot) and /proc/stat's btime.
func processStart(pid int) (time.Time, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return time.Time{}, err
	}
	// The command (field 2) is in parentheses and may hold spaces and ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return time.Time{}, fmt.Errorf("lifecycle: /proc/%d/stat: no command field", pid)
	}
	fields := bytes.Fields(b[i+1:]) // field 3 (state) onwards
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
