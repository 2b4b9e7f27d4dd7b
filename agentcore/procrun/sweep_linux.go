// Sweep (Linux): the processes a run's child left behind outside its
// process group, found by the run's token in their environment.

package procrun

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// Sweep kills every process (but this one) whose environment holds entry
// (see RunToken) and returns how many it killed. Processes whose environment
// cannot be read (another user's, without the right to) are not seen. It
// passes twice, for children forked while the first pass ran.
func Sweep(entry string) int {
	want := append([]byte{0}, append([]byte(entry), 0)...)
	killed := map[int]bool{}
	for range 2 {
		dirs, _ := os.ReadDir("/proc")
		for _, e := range dirs {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() || killed[pid] {
				continue
			}
			env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
			if err != nil || !bytes.Contains(append(append([]byte{0}, env...), 0), want) {
				continue
			}
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed[pid] = true
			}
		}
	}
	return len(killed)
}
