package store_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

func TestSchedules(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		sc := store.Schedule{Name: "standup", Cron: "0 9 * * 1-5", TZ: "Europe/Berlin", Platform: "slack", Workspace: "T1", Channel: "C1",
			Project: "web", Agent: "claude", Prompt: "Summarise yesterday's commits", CreatedBy: "cli"}
		if err := s.AddSchedule(ctx, sc); err != nil {
			t.Fatal(err)
		}
		if err := s.AddSchedule(ctx, sc); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("second AddSchedule: %v, want ErrConflict", err)
		}
		if err := s.AddSchedule(ctx, store.Schedule{Name: "x", Cron: "* * * * *", Platform: "slack", Channel: "C", Catchup: "always"}); err == nil {
			t.Fatal("AddSchedule with catchup always: no error")
		}
		got, err := s.Schedule(ctx, "standup")
		if err != nil {
			t.Fatal(err)
		}
		if got.Catchup != store.CatchupSkip || got.Prompt != sc.Prompt || got.TZ != sc.TZ || got.Workspace != "T1" || got.CreatedAt.IsZero() {
			t.Errorf("Schedule = %+v", got)
		}
		if _, err := s.Schedule(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Schedule(nope): %v", err)
		}
		list, err := s.Schedules(ctx)
		if err != nil || len(list) != 1 || list[0].Name != "standup" {
			t.Fatalf("Schedules = %+v, %v", list, err)
		}

		occ := time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)
		if last, err := s.LastScheduleOccurrence(ctx, "standup"); err != nil || !last.IsZero() {
			t.Fatalf("LastScheduleOccurrence before any = %v, %v", last, err)
		}
		// Of concurrent claimants of one occurrence exactly one wins.
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			wins int
		)
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok, err := s.ClaimScheduleFiring(ctx, "standup", occ, "host:"+string(rune('a'+i)))
				if err != nil {
					t.Error(err)
				}
				if ok {
					mu.Lock()
					wins++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if wins != 1 {
			t.Fatalf("%d claims won, want 1", wins)
		}
		if _, err := s.ClaimScheduleFiring(ctx, "nope", occ, "h"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("claim of a missing schedule: %v", err)
		}
		if last, err := s.LastScheduleOccurrence(ctx, "standup"); err != nil || !last.Equal(occ) {
			t.Fatalf("LastScheduleOccurrence = %v, %v; want %v", last, err, occ)
		}
		if err := s.FinishScheduleFiring(ctx, "standup", occ, store.FiringStarted, "chat-1", ""); err != nil {
			t.Fatal(err)
		}

		// A manual run: requested, then claimed by one.
		at := occ.Add(90*time.Minute + 1234567*time.Nanosecond)
		if err := s.RequestScheduleRun(ctx, "standup", at, "slack:U1"); err != nil {
			t.Fatal(err)
		}
		if err := s.RequestScheduleRun(ctx, "nope", at, "slack:U1"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("run of a missing schedule: %v", err)
		}
		req, err := s.RequestedScheduleRuns(ctx)
		if err != nil || len(req) != 1 || req[0].Kind != store.FiringManual || req[0].By != "slack:U1" {
			t.Fatalf("RequestedScheduleRuns = %+v, %v", req, err)
		}
		if ok, err := s.ClaimScheduleRun(ctx, "standup", req[0].Occurrence, "h1"); err != nil || !ok {
			t.Fatalf("ClaimScheduleRun = %v, %v", ok, err)
		}
		if ok, err := s.ClaimScheduleRun(ctx, "standup", req[0].Occurrence, "h2"); err != nil || ok {
			t.Fatalf("second ClaimScheduleRun = %v, %v", ok, err)
		}
		if err := s.FinishScheduleFiring(ctx, "standup", req[0].Occurrence, store.FiringSkipped, "", "still running"); err != nil {
			t.Fatal(err)
		}
		if req, err := s.RequestedScheduleRuns(ctx); err != nil || len(req) != 0 {
			t.Fatalf("RequestedScheduleRuns after claim = %+v, %v", req, err)
		}
		// A manual run is no cron occurrence.
		if last, err := s.LastScheduleOccurrence(ctx, "standup"); err != nil || !last.Equal(occ) {
			t.Fatalf("LastScheduleOccurrence after a manual run = %v, %v; want %v", last, err, occ)
		}
		fs, err := s.ScheduleFirings(ctx, "standup", 10)
		if err != nil || len(fs) != 2 {
			t.Fatalf("ScheduleFirings = %+v, %v", fs, err)
		}
		if fs[0].State != store.FiringSkipped || fs[0].Note != "still running" || fs[1].ChatID != "chat-1" || fs[1].Owner == "" {
			t.Errorf("ScheduleFirings = %+v", fs)
		}

		if running, err := s.ChatRunning(ctx, "chat-1"); err != nil || running {
			t.Errorf("ChatRunning = %v, %v", running, err)
		}

		if w, err := s.ChannelWorkspace(ctx, "slack", "C1"); err != nil || w != "" {
			t.Errorf("ChannelWorkspace before any binding = %q, %v", w, err)
		}
		newChats(t, s, "bound")
		if _, _, err := s.Bind(ctx, store.Binding{ThreadRef: store.ThreadRef{Platform: "slack", Workspace: "T9", Channel: "C1", Thread: "1.2"}, ChatID: "bound"}); err != nil {
			t.Fatal(err)
		}
		if w, err := s.ChannelWorkspace(ctx, "slack", "C1"); err != nil || w != "T9" {
			t.Errorf("ChannelWorkspace = %q, %v; want T9", w, err)
		}

		if err := s.RemoveSchedule(ctx, "standup"); err != nil {
			t.Fatal(err)
		}
		if err := s.RemoveSchedule(ctx, "standup"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("second RemoveSchedule: %v", err)
		}
		if fs, err := s.ScheduleFirings(ctx, "standup", 10); err != nil || len(fs) != 0 {
			t.Errorf("firings after remove = %+v, %v", fs, err)
		}
	})
}
