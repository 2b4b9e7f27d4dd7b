package store_test

import (
	"slices"
	"testing"

	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// TestChatsByPrefix: the chats whose id starts with a prefix, exactly (case
// and LIKE's wildcards count as themselves), bounded by limit.
func TestChatsByPrefix(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		for _, id := range []string{"ab12-one", "ab12-two", "ab34", "AB12-upper", "a_b%-odd", "zz"} {
			newChat(t, s, id)
		}
		for _, c := range []struct {
			prefix string
			limit  int
			want   []string
		}{
			{"ab12", 10, []string{"ab12-one", "ab12-two"}},
			{"ab", 10, []string{"ab12-one", "ab12-two", "ab34"}},
			{"ab12-two", 10, []string{"ab12-two"}},
			{"AB", 10, []string{"AB12-upper"}},
			{"a_b%", 10, []string{"a_b%-odd"}},
			{"a_", 10, []string{"a_b%-odd"}},
			{"abc", 10, nil},
			{"ab", 2, []string{"ab12-one", "ab12-two"}},
		} {
			got, err := s.ChatsByPrefix(t.Context(), c.prefix, c.limit)
			if err != nil {
				t.Fatalf("ChatsByPrefix(%q): %v", c.prefix, err)
			}
			if c.limit == 2 {
				if len(got) != 2 {
					t.Errorf("ChatsByPrefix(%q, 2) = %q, want 2 ids", c.prefix, got)
				}
				continue
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("ChatsByPrefix(%q) = %q, want %q", c.prefix, got, c.want)
			}
		}
	})
}
