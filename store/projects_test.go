package store_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

func TestProjects(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		p := store.Project{Name: "web", Container: "web-c", Image: "bb", Workspace: "/srv/web"}
		if err := s.CreateProject(ctx, &p); err != nil {
			t.Fatal(err)
		}
		if p.CreatedAt.IsZero() {
			t.Error("CreatedAt not set")
		}
		if err := s.CreateProject(ctx, &store.Project{Name: "api", Container: "api-c"}); err != nil {
			t.Fatal(err)
		}

		t.Run("get and list", func(t *testing.T) {
			got, err := s.GetProject(ctx, "web")
			if err != nil {
				t.Fatal(err)
			}
			if got.Container != "web-c" || got.Image != "bb" || got.Workspace != "/srv/web" || got.Status != "" {
				t.Errorf("GetProject = %+v", got)
			}
			list, err := s.ListProjects(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != 2 || list[0].Name != "api" || list[1].Name != "web" {
				t.Errorf("ListProjects = %+v", list)
			}
			if _, err := s.GetProject(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("GetProject(nope) = %v", err)
			}
		})
		t.Run("conflicts", func(t *testing.T) {
			if err := s.CreateProject(ctx, &store.Project{Name: "web", Container: "other"}); !errors.Is(err, store.ErrConflict) {
				t.Errorf("duplicate name: %v", err)
			}
			if err := s.CreateProject(ctx, &store.Project{Name: "web2", Container: "web-c"}); !errors.Is(err, store.ErrConflict) {
				t.Errorf("shared container: %v", err)
			}
			if err := s.CreateProject(ctx, &store.Project{Container: "nameless"}); err == nil {
				t.Error("project without a name accepted")
			}
		})
		t.Run("status", func(t *testing.T) {
			if err := s.SetProjectStatus(ctx, "web", "running"); err != nil {
				t.Fatal(err)
			}
			if got, _ := s.GetProject(ctx, "web"); got.Status != "running" {
				t.Errorf("status = %q", got.Status)
			}
			if err := s.SetProjectStatus(ctx, "nope", "running"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("unknown project: %v", err)
			}
		})
		t.Run("secrets", func(t *testing.T) {
			for _, kv := range [][2]string{{"TOKEN", "v1"}, {"API_KEY", "k"}, {"TOKEN", "v2"}} {
				if err := s.SetProjectSecret(ctx, "web", kv[0], kv[1]); err != nil {
					t.Fatal(err)
				}
			}
			names, err := s.ProjectSecretNames(ctx, "web")
			if err != nil || !slices.Equal(names, []string{"API_KEY", "TOKEN"}) {
				t.Errorf("names = %v, %v", names, err)
			}
			secrets, err := s.ProjectSecrets(ctx, "web")
			want := []store.ProjectSecret{{Name: "API_KEY", Value: "k"}, {Name: "TOKEN", Value: "v2"}}
			if err != nil || !slices.Equal(secrets, want) {
				t.Errorf("secrets = %v, %v", secrets, err)
			}
			if other, _ := s.ProjectSecrets(ctx, "api"); len(other) != 0 {
				t.Errorf("another project's secrets leaked: %v", other)
			}
			err = s.SetProjectSecret(ctx, "nope", "K", "very-secret-value")
			if !errors.Is(err, store.ErrNotFound) || strings.Contains(err.Error(), "very-secret-value") {
				t.Errorf("unknown project: %v", err)
			}
			if err := s.DeleteProjectSecret(ctx, "web", "API_KEY"); err != nil {
				t.Fatal(err)
			}
			if err := s.DeleteProjectSecret(ctx, "web", "API_KEY"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("second unset: %v", err)
			}
			if names, _ := s.ProjectSecretNames(ctx, "web"); !slices.Equal(names, []string{"TOKEN"}) {
				t.Errorf("names = %v", names)
			}
		})
		t.Run("repository fields", func(t *testing.T) {
			in := store.Project{Name: "repo", Container: "repo-c", Repo: "https://git.example.org/team/repo.git", Base: "main",
				Setup: "make deps", Forge: "gitea", ForgeURL: "https://git.example.org", CloneDir: "/var/lib/threadline/repos/repo"}
			if err := s.CreateProject(ctx, &in); err != nil {
				t.Fatal(err)
			}
			got, err := s.GetProject(ctx, "repo")
			if err != nil {
				t.Fatal(err)
			}
			if got.Repo != in.Repo || got.Base != in.Base || got.Setup != in.Setup || got.Forge != in.Forge ||
				got.ForgeURL != in.ForgeURL || got.CloneDir != in.CloneDir {
				t.Errorf("GetProject = %+v, want the fields of %+v", got, in)
			}
			list, err := s.ListProjects(ctx)
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(list, func(p store.Project) bool { return p.Name == "repo" })
			if i < 0 || list[i].Repo != in.Repo || list[i].Forge != "gitea" || list[i].CloneDir != in.CloneDir {
				t.Errorf("ListProjects = %+v", list)
			}
			if i := slices.IndexFunc(list, func(p store.Project) bool { return p.Name == "api" }); i < 0 ||
				list[i].Repo != "" || list[i].Base != "" || list[i].Setup != "" || list[i].Forge != "" || list[i].ForgeURL != "" || list[i].CloneDir != "" {
				t.Errorf("a project without a repository: %+v", list)
			}

			before := got.UpdatedAt
			if err := s.SetProjectCloneDir(ctx, "repo", "/srv/clones/repo"); err != nil {
				t.Fatal(err)
			}
			if got, _ := s.GetProject(ctx, "repo"); got.CloneDir != "/srv/clones/repo" || got.Repo != in.Repo || got.UpdatedAt.Before(before) {
				t.Errorf("after SetProjectCloneDir: %+v", got)
			}
			if err := s.SetProjectCloneDir(ctx, "nope", "/x"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("unknown project: %v", err)
			}
			if err := s.DeleteProject(ctx, "repo"); err != nil {
				t.Fatal(err)
			}
		})
		t.Run("host projects", func(t *testing.T) {
			// Container "" runs on the host: any number of projects may have
			// none, while a named container still serves one project.
			for _, name := range []string{"host1", "host2"} {
				if err := s.CreateProject(ctx, &store.Project{Name: name, Repo: "/srv/" + name}); err != nil {
					t.Fatalf("host project %s: %v", name, err)
				}
			}
			if got, err := s.GetProject(ctx, "host2"); err != nil || got.Container != "" || got.Repo != "/srv/host2" {
				t.Errorf("GetProject(host2) = %+v, %v", got, err)
			}
			if err := s.CreateProject(ctx, &store.Project{Name: "api2", Container: "api-c"}); !errors.Is(err, store.ErrConflict) {
				t.Errorf("shared container beside host projects: %v", err)
			}
			for _, name := range []string{"host1", "host2"} {
				if err := s.DeleteProject(ctx, name); err != nil {
					t.Fatal(err)
				}
			}
		})
		t.Run("delete removes secrets", func(t *testing.T) {
			if err := s.DeleteProject(ctx, "web"); err != nil {
				t.Fatal(err)
			}
			if err := s.DeleteProject(ctx, "web"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("second delete: %v", err)
			}
			if err := s.CreateProject(ctx, &store.Project{Name: "web", Container: "web-c"}); err != nil {
				t.Fatalf("re-add after delete: %v", err)
			}
			if names, _ := s.ProjectSecretNames(ctx, "web"); len(names) != 0 {
				t.Errorf("secrets survived the project: %v", names)
			}
		})
	})
}
