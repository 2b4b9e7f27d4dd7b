// Tests of project access lists (migration 0006) on Postgres and SQLite.

package store_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

func TestProjectAccess(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		p := store.Project{Name: "team", Container: "team-c", Channels: []string{"C2", "C1", "C1"}, Allow: []string{"U9", "slack:U1"}}
		if err := s.CreateProject(ctx, &p); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateProject(ctx, &store.Project{Name: "open", Container: "open-c"}); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetProject(ctx, "team")
		if err != nil || !slices.Equal(got.Channels, []string{"C1", "C2"}) || !slices.Equal(got.Allow, []string{"U9", "slack:U1"}) {
			t.Fatalf("GetProject = %+v, %v", got, err)
		}
		pa, err := s.GetProject(ctx, "team")
		if err != nil || pa.Name != "team" || !slices.Equal(pa.Channels, []string{"C1", "C2"}) || !slices.Equal(pa.Allow, []string{"U9", "slack:U1"}) {
			t.Fatalf("GetProject = %+v, %v", pa, err)
		}
		if pa, err := s.GetProject(ctx, "open"); err != nil || pa.Channels != nil || pa.Allow != nil {
			t.Fatalf("GetProject(open) = %+v, %v", pa, err)
		}
		if _, err := s.GetProject(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("GetProject(nope) = %v, want ErrNotFound", err)
		}
		list, err := s.ListProjects(ctx)
		if err != nil || len(list) != 2 || !slices.Equal(list[1].Channels, []string{"C1", "C2"}) || list[0].Channels != nil {
			t.Fatalf("ListProjects = %+v, %v", list, err)
		}
		if err := s.SetProjectAccess(ctx, "team", []string{"C3"}, nil); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.GetProject(ctx, "team"); !slices.Equal(got.Channels, []string{"C3"}) || got.Allow != nil {
			t.Fatalf("after SetProjectAccess: %+v", got)
		}
		if err := s.SetProjectAccess(ctx, "nope", []string{"C1"}, nil); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("SetProjectAccess(nope) = %v", err)
		}
		if err := s.SetProjectAccess(ctx, "team", []string{""}, nil); err == nil {
			t.Error("an empty channel was stored")
		}
		if got, _ := s.GetProject(ctx, "team"); !slices.Equal(got.Channels, []string{"C3"}) {
			t.Fatalf("a failed SetProjectAccess changed the list: %+v", got)
		}
		// A failed create stores no access rows (the tx rolls back).
		if err := s.CreateProject(ctx, &store.Project{Name: "dup", Container: "team-c", Channels: []string{"C1"}}); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("shared container: %v", err)
		}
		if err := s.CreateProject(ctx, &store.Project{Name: "dup", Container: "dup-c"}); err != nil {
			t.Fatal(err)
		}
		if pa, _ := s.GetProject(ctx, "dup"); pa.Channels != nil {
			t.Fatalf("rows of the failed create survived: %+v", pa)
		}
		// Deleting the project deletes its access rows; a new project of the
		// same name starts open.
		if err := s.DeleteProject(ctx, "team"); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateProject(ctx, &store.Project{Name: "team", Container: "team-c"}); err != nil {
			t.Fatal(err)
		}
		if pa, _ := s.GetProject(ctx, "team"); pa.Channels != nil || pa.Allow != nil {
			t.Fatalf("access rows outlived the project: %+v", pa)
		}
	})
}
