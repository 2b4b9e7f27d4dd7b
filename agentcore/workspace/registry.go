package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// registryDir is where a main clone records its chat clones and spares,
// inside its git directory: the bot's, mode 0700 (the agents read the
// main clone's objects, never this).
const registryDir = "threadline/clones"

// record is one chat clone or spare of a main clone.
type record struct {
	Dir    string `json:"dir"`
	Branch string `json:"branch,omitempty"` // "" for a spare
	Base   string `json:"base"`
	Spare  bool   `json:"spare,omitempty"`
	Ready  bool   `json:"ready"` // made; false while it is being made
}

// registry is the records of one main clone, a file per clone named by a
// hash of its directory. A spare is claimed by renaming its file (atomic:
// one Create wins).
type registry struct{ dir string }

// registry is the registry of the main clone main.
func (g *Git) registry(ctx context.Context, main string) (registry, error) {
	if !filepath.IsAbs(main) {
		return registry{}, invalid("the main clone needs an absolute path")
	}
	gitDir, err := g.gitDir(ctx, filepath.Clean(main))
	if err != nil {
		return registry{}, err
	}
	dir := filepath.Join(gitDir, registryDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return registry{}, err
	}
	return registry{dir: dir}, nil
}

// gitDir is the (common) git directory of the main clone main, cached.
func (g *Git) gitDir(ctx context.Context, main string) (string, error) {
	if d, ok := g.gitDirs.Load(main); ok {
		return d.(string), nil
	}
	d, err := g.bot(main).run(ctx, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return "", err
	}
	g.gitDirs.Store(main, d)
	return d, nil
}

// path is the file of the record of dir.
func (r registry) path(dir string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(dir)))
	return filepath.Join(r.dir, hex.EncodeToString(sum[:16])+".json")
}

// get is the record of dir, if any.
func (r registry) get(dir string) (record, bool, error) {
	return readRecord(r.path(dir))
}

// readRecord reads one record file.
func readRecord(path string) (record, bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return record{}, false, nil
	}
	if err != nil {
		return record{}, false, err
	}
	var rec record
	if err := json.Unmarshal(b, &rec); err != nil {
		return record{}, false, fmt.Errorf("workspace registry %s: %w", path, err)
	}
	return rec, true, nil
}

// put writes rec (a new file renamed into place).
func (r registry) put(rec record) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(r.dir, ".tmp-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), r.path(rec.Dir)); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// del forgets dir; one not recorded is fine.
func (r registry) del(dir string) error {
	if err := os.Remove(r.path(dir)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// list is every record, by directory.
func (r registry) list() ([]record, error) {
	entries, err := os.ReadDir(r.dir)
	if err != nil {
		return nil, err
	}
	var recs []record
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue // a claimed spare, a temporary file
		}
		rec, ok, err := readRecord(filepath.Join(r.dir, e.Name()))
		if err != nil {
			return nil, err
		}
		if ok {
			recs = append(recs, rec)
		}
	}
	slices.SortFunc(recs, func(a, b record) int { return strings.Compare(a.Dir, b.Dir) })
	return recs, nil
}

// claim takes the record of dir for this caller alone: false when another
// took it first.
func (r registry) claim(dir string) bool {
	return os.Rename(r.path(dir), r.path(dir)+".claim") == nil
}

// unclaim gives a claimed record back.
func (r registry) unclaim(dir string) error {
	return os.Rename(r.path(dir)+".claim", r.path(dir))
}

// dropClaim forgets a claimed record.
func (r registry) dropClaim(dir string) error {
	if err := os.Remove(r.path(dir) + ".claim"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
