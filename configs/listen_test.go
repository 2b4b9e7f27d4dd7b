package configs

import (
	"strings"
	"testing"
)

func TestPlanListeners(t *testing.T) {
	type want struct {
		addr  string
		admin bool
	}
	for _, tc := range []struct {
		name   string
		cfg    HTTPConfig
		public bool
		want   []want
		err    string
	}{
		{"socket mode, loopback listen", HTTPConfig{Listen: "127.0.0.1:8780"}, false, []want{{"127.0.0.1:8780", true}}, ""},
		{"socket mode, localhost", HTTPConfig{Listen: "localhost:8780"}, false, []want{{"localhost:8780", true}}, ""},
		{"socket mode, ::1", HTTPConfig{Listen: "[::1]:8780"}, false, []want{{"[::1]:8780", true}}, ""},
		{"socket mode, public listen", HTTPConfig{Listen: "0.0.0.0:8780"}, false, []want{{"127.0.0.1:8781", true}}, ""},
		{"socket mode, all interfaces", HTTPConfig{Listen: ":8780"}, false, []want{{"127.0.0.1:8781", true}}, ""},
		{"socket mode, admin set", HTTPConfig{Listen: "127.0.0.1:8780", AdminListen: "127.0.0.1:9000"}, false, []want{{"127.0.0.1:9000", true}}, ""},
		{"http mode", HTTPConfig{Listen: "0.0.0.0:8780"}, true, []want{{"0.0.0.0:8780", false}, {"127.0.0.1:8781", true}}, ""},
		{"http mode, loopback listen", HTTPConfig{Listen: "127.0.0.1:8780"}, true, []want{{"127.0.0.1:8780", false}, {"127.0.0.1:8781", true}}, ""},
		{"http mode, admin set", HTTPConfig{Listen: "0.0.0.0:8780", AdminListen: "10.0.0.5:9100"}, true, []want{{"0.0.0.0:8780", false}, {"10.0.0.5:9100", true}}, ""},
		{"http mode, admin on the same address", HTTPConfig{Listen: "0.0.0.0:8780", AdminListen: "0.0.0.0:8780"}, true, nil, "must differ"},
		{"http mode, admin under the wildcard", HTTPConfig{Listen: ":8780", AdminListen: "127.0.0.1:8780"}, true, nil, "must differ"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.cfg.Listeners(tc.public)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("listeners = %+v, want %+v", got, tc.want)
			}
			for i, w := range tc.want {
				if got[i].Addr != w.addr || got[i].Admin != w.admin {
					t.Errorf("listener %d = %+v, want %+v", i, got[i], w)
				}
			}
		})
	}
}
