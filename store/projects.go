// projects.go: projects and their secrets (migration 0004), who may bind
// chats to them (migration 0006) and their repositories (migration 0012).
package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// Project binds a name to an LXD container, where project chats run, or to
// the host (no container), and optionally to a git repository, of which each
// chat gets its own worktree and branch (workspaces.go).
type Project struct {
	Name string
	// Container is the LXD instance name (unique across the projects that
	// have one); empty: the project's chats run on the host.
	Container string
	// Image creates the container when it is missing; empty uses lxd.image.
	Image string
	// Workspace is the host directory mounted at /workspace; empty: none.
	Workspace string
	// Status is the container status the preparer last recorded.
	Status string
	// Repo is where the project's repository is cloned from (a git URL or a
	// host path); empty: the project owns no repository.
	Repo string
	// Base is the branch chats start from and land on; empty: the
	// repository's default branch.
	Base string
	// Setup is the bootstrap command run in each new worktree; empty: none.
	Setup string
	// Forge is the kind of forge pull requests go to ("", "gitea", "github",
	// "gitlab") and ForgeURL its address ("": the kind's public one, or
	// none). The store keeps them as given.
	Forge    string
	ForgeURL string
	// CloneDir is where the main clone lives on this host; empty: not
	// cloned yet (SetProjectCloneDir).
	CloneDir string
	// Channels are the channels (or Matrix rooms) whose chats may use the
	// project ("*": every channel), Allow the users who may bind a chat to it
	// (empty: anyone the channel lets). No Channels (no rows, as for every
	// project made before access lists) means admins only (chatops.MayBind).
	// Both come back sorted.
	Channels  []string
	Allow     []string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ProjectSecret is one secret environment variable of a project.
type ProjectSecret struct {
	Name  string
	Value string
}

type projectRow struct {
	Name      string    `db:"name"`
	Container string    `db:"container"`
	Image     string    `db:"image"`
	Workspace string    `db:"workspace"`
	Status    string    `db:"status"`
	Repo      string    `db:"repo"`
	Base      string    `db:"base"`
	Setup     string    `db:"setup"`
	Forge     string    `db:"forge"`
	ForgeURL  string    `db:"forge_url"`
	CloneDir  string    `db:"clone_dir"`
	CreatedAt time.Time `db:"created_at"`
	UpdatedAt time.Time `db:"updated_at"`
}

func (r projectRow) project() Project {
	return Project{Name: r.Name, Container: r.Container, Image: r.Image, Workspace: r.Workspace, Status: r.Status,
		Repo: r.Repo, Base: r.Base, Setup: r.Setup, Forge: r.Forge, ForgeURL: r.ForgeURL, CloneDir: r.CloneDir,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
}

const (
	projectColumns = `name, container, image, workspace, status, repo, base, setup, forge, forge_url, clone_dir, created_at, updated_at`

	queryInsertProject = `INSERT INTO projects (` + projectColumns + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`
	queryGetProject    = `SELECT ` + projectColumns + ` FROM projects WHERE name = $1`
	queryListProjects  = `SELECT ` + projectColumns + ` FROM projects ORDER BY name`
	queryProjectStatus = `UPDATE projects SET status = $2, updated_at = $3 WHERE name = $1`
	queryProjectClone  = `UPDATE projects SET clone_dir = $2, updated_at = $3 WHERE name = $1`
	queryProjectBase   = `UPDATE projects SET base = $2, updated_at = $3 WHERE name = $1`
	queryDeleteSecrets = `DELETE FROM project_secrets WHERE project = $1`
	queryDeleteProject = `DELETE FROM projects WHERE name = $1`

	queryUpsertSecret = `INSERT INTO project_secrets (project, name, value, updated_at) VALUES ($1, $2, $3, $4)
ON CONFLICT (project, name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`
	querySecretNames  = `SELECT name FROM project_secrets WHERE project = $1 ORDER BY name`
	querySecrets      = `SELECT name, value FROM project_secrets WHERE project = $1 ORDER BY name`
	queryDeleteSecret = `DELETE FROM project_secrets WHERE project = $1 AND name = $2`
	queryProjectCount = `SELECT COUNT(*) FROM projects WHERE name = $1`

	queryInsertAccess  = `INSERT INTO project_access (project, kind, value) VALUES ($1, $2, $3) ON CONFLICT (project, kind, value) DO NOTHING`
	queryDeleteAccess  = `DELETE FROM project_access WHERE project = $1`
	queryProjectAccess = `SELECT kind, value FROM project_access WHERE project = $1 ORDER BY kind, value`
)

// Kinds of project_access rows.
const (
	accessChannel = "channel"
	accessUser    = "user"
)

// CreateProject inserts p, setting CreatedAt and UpdatedAt. A duplicate name,
// or a container another project uses, is ErrConflict; any number of
// projects may have no container (host projects).
func (s *Store) CreateProject(ctx context.Context, p *Project) error {
	if p.Name == "" {
		return fmt.Errorf("store: create project: a name is required")
	}
	t := now()
	err := s.InTx(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, queryInsertProject, p.Name, p.Container, p.Image, p.Workspace, p.Status,
			p.Repo, p.Base, p.Setup, p.Forge, p.ForgeURL, p.CloneDir, t, t); err != nil {
			return translate(err)
		}
		return insertAccess(ctx, tx, p.Name, p.Channels, p.Allow)
	})
	if err != nil {
		return fmt.Errorf("store: create project %s: %w", p.Name, err)
	}
	p.CreatedAt, p.UpdatedAt = t, t
	return nil
}

// insertAccess adds the project's channel and user rows.
func insertAccess(ctx context.Context, tx *sqlx.Tx, project string, channels, allow []string) error {
	for _, l := range []struct {
		kind   string
		values []string
	}{{accessChannel, channels}, {accessUser, allow}} {
		for _, v := range l.values {
			if v == "" {
				return fmt.Errorf("empty %s in the access list", l.kind)
			}
			if _, err := tx.ExecContext(ctx, queryInsertAccess, project, l.kind, v); err != nil {
				return translate(err)
			}
		}
	}
	return nil
}

// SetProjectAccess replaces the project's channels and users lists, or
// returns ErrNotFound.
func (s *Store) SetProjectAccess(ctx context.Context, name string, channels, allow []string) error {
	err := s.InTx(ctx, func(tx *sqlx.Tx) error {
		var n int
		if err := tx.GetContext(ctx, &n, queryProjectCount, name); err != nil {
			return translate(err)
		}
		if n == 0 {
			return ErrNotFound
		}
		if _, err := tx.ExecContext(ctx, queryDeleteAccess, name); err != nil {
			return translate(err)
		}
		return insertAccess(ctx, tx, name, channels, allow)
	})
	if err != nil {
		return fmt.Errorf("store: set access of project %s: %w", name, err)
	}
	return nil
}

// projectAccess reads the project's channels and users lists.
func (s *Store) projectAccess(ctx context.Context, name string) (channels, allow []string, err error) {
	var rows []struct {
		Kind  string `db:"kind"`
		Value string `db:"value"`
	}
	if err := s.db.SelectContext(ctx, &rows, queryProjectAccess, name); err != nil {
		return nil, nil, fmt.Errorf("store: access of project %s: %w", name, translate(err))
	}
	for _, r := range rows {
		switch r.Kind {
		case accessChannel:
			channels = append(channels, r.Value)
		case accessUser:
			allow = append(allow, r.Value)
		}
	}
	return channels, allow, nil
}

// GetProject returns the project or ErrNotFound.
func (s *Store) GetProject(ctx context.Context, name string) (Project, error) {
	var r projectRow
	if err := s.db.GetContext(ctx, &r, queryGetProject, name); err != nil {
		return Project{}, fmt.Errorf("store: get project %s: %w", name, translate(err))
	}
	p := r.project()
	var err error
	if p.Channels, p.Allow, err = s.projectAccess(ctx, name); err != nil {
		return Project{}, err
	}
	return p, nil
}

// ListProjects returns every project by name.
func (s *Store) ListProjects(ctx context.Context) ([]Project, error) {
	var rows []projectRow
	if err := s.db.SelectContext(ctx, &rows, queryListProjects); err != nil {
		return nil, fmt.Errorf("store: list projects: %w", translate(err))
	}
	out := make([]Project, len(rows))
	for i, r := range rows {
		out[i] = r.project()
		var err error
		if out[i].Channels, out[i].Allow, err = s.projectAccess(ctx, r.Name); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// SetProjectStatus records the container status of the project, or returns
// ErrNotFound.
func (s *Store) SetProjectStatus(ctx context.Context, name, status string) error {
	res, err := s.db.ExecContext(ctx, queryProjectStatus, name, status, now())
	if err != nil {
		return fmt.Errorf("store: set status of project %s: %w", name, translate(err))
	}
	return expectOne(res, "set status of project "+name)
}

// SetProjectCloneDir records where the project's main clone lives on this
// host, or returns ErrNotFound.
func (s *Store) SetProjectCloneDir(ctx context.Context, name, dir string) error {
	res, err := s.db.ExecContext(ctx, queryProjectClone, name, dir, now())
	if err != nil {
		return fmt.Errorf("store: set clone directory of project %s: %w", name, translate(err))
	}
	return expectOne(res, "set clone directory of project "+name)
}

// SetProjectBase records the project's base branch (the repository's
// default, found when it was added without one).
func (s *Store) SetProjectBase(ctx context.Context, name, base string) error {
	res, err := s.db.ExecContext(ctx, queryProjectBase, name, base, now())
	if err != nil {
		return fmt.Errorf("store: set base branch of project %s: %w", name, translate(err))
	}
	return expectOne(res, "set base branch of project "+name)
}

// DeleteProject removes the project and its secrets, or returns ErrNotFound.
// Its container is not touched.
func (s *Store) DeleteProject(ctx context.Context, name string) error {
	err := s.InTx(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, queryDeleteSecrets, name); err != nil {
			return translate(err)
		}
		if _, err := tx.ExecContext(ctx, queryDeleteAccess, name); err != nil {
			return translate(err)
		}
		res, err := tx.ExecContext(ctx, queryDeleteProject, name)
		if err != nil {
			return translate(err)
		}
		return expectOne(res, "delete project "+name)
	})
	if err != nil {
		return fmt.Errorf("store: delete project %s: %w", name, err)
	}
	return nil
}

// SetProjectSecret sets (or replaces) the project's secret name. A project
// that does not exist is ErrNotFound. The value is never part of the error.
func (s *Store) SetProjectSecret(ctx context.Context, project, name, value string) error {
	if name == "" {
		return fmt.Errorf("store: set secret of project %s: empty name", project)
	}
	err := s.InTx(ctx, func(tx *sqlx.Tx) error {
		var n int
		if err := tx.GetContext(ctx, &n, queryProjectCount, project); err != nil {
			return translate(err)
		}
		if n == 0 {
			return ErrNotFound
		}
		_, err := tx.ExecContext(ctx, queryUpsertSecret, project, name, value, now())
		return translate(err)
	})
	if err != nil {
		return fmt.Errorf("store: set secret %s of project %s: %w", name, project, err)
	}
	return nil
}

// ProjectSecretNames lists the names of the project's secrets, sorted.
func (s *Store) ProjectSecretNames(ctx context.Context, project string) ([]string, error) {
	var names []string
	if err := s.db.SelectContext(ctx, &names, querySecretNames, project); err != nil {
		return nil, fmt.Errorf("store: secret names of project %s: %w", project, translate(err))
	}
	return names, nil
}

// ProjectSecrets returns the project's secrets with their values, sorted by
// name. Only the preparer of the project's container should call it.
func (s *Store) ProjectSecrets(ctx context.Context, project string) ([]ProjectSecret, error) {
	var rows []struct {
		Name  string `db:"name"`
		Value string `db:"value"`
	}
	if err := s.db.SelectContext(ctx, &rows, querySecrets, project); err != nil {
		return nil, fmt.Errorf("store: secrets of project %s: %w", project, translate(err))
	}
	out := make([]ProjectSecret, len(rows))
	for i, r := range rows {
		out[i] = ProjectSecret{Name: r.Name, Value: r.Value}
	}
	return out, nil
}

// DeleteProjectSecret removes the project's secret name, or returns ErrNotFound.
func (s *Store) DeleteProjectSecret(ctx context.Context, project, name string) error {
	res, err := s.db.ExecContext(ctx, queryDeleteSecret, project, name)
	if err != nil {
		return fmt.Errorf("store: delete secret %s of project %s: %w", name, project, translate(err))
	}
	return expectOne(res, fmt.Sprintf("delete secret %s of project %s", name, project))
}
