// storage.min_free: new runs are refused while the disk of the database or
// of the chats' working directories is nearly full (an agent's tool can
// fill the disk the database shares: then its events could not be stored).

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/threadline-bot/threadline/agentcore/shipgate"
	"github.com/threadline-bot/threadline/configs"
	"github.com/threadline-bot/threadline/store"
)

// admitStorage returns the check a run's start asks (prompt.Options.Admit):
// each of the SQLite database's directory and the work root (when set,
// existing) must have at least cfg.MinFree() bytes free for the bot's user.
// Nil without a floor.
func admitStorage(cfg *configs.Config) func(context.Context) error {
	floor := cfg.MinFree()
	if floor <= 0 {
		return nil
	}
	type place struct{ what, dir string }
	var places []place
	if files := store.SQLiteFiles(cfg.Database.URL); len(files) > 0 {
		places = append(places, place{"the database", filepath.Dir(files[0])})
	}
	if w := cfg.WorkRoot(); w != "" {
		places = append(places, place{"the chats' working directories", w})
	}
	return func(context.Context) error {
		for _, p := range places {
			free, err := freeBytes(p.dir)
			if err != nil {
				continue // not there yet: nothing to measure
			}
			if free < floor {
				return fmt.Errorf("the disk of %s (%s) has %s free, below storage.min_free (%s): an operator must free space first",
					p.what, p.dir, shipgate.HumanSize(free), shipgate.HumanSize(floor))
			}
		}
		return nil
	}
}

// freeBytes is the space available to this process on dir's file system,
// measured at dir or the nearest directory above it that exists.
func freeBytes(dir string) (int64, error) {
	for {
		var st unix.Statfs_t
		err := unix.Statfs(dir, &st)
		if err == nil {
			return int64(st.Bavail) * int64(st.Bsize), nil
		}
		if !os.IsNotExist(err) || filepath.Dir(dir) == dir {
			return 0, err
		}
		dir = filepath.Dir(dir)
	}
}
