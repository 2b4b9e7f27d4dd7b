// The Matrix client-server API's endpoints as metric labels.

package matrix

import "strings"

// APIMethod names a client-server API call for a metric label without ids:
// its endpoint after the version ("sync", "keys"), "rooms/<action>" for a
// room's ("rooms/send").
func APIMethod(path string) string {
	p := path
	if i := strings.Index(p, "/client/"); i >= 0 {
		p = p[i+len("/client/"):]
		if j := strings.IndexByte(p, '/'); j >= 0 { // the version: v3, unstable
			p = p[j+1:]
		}
	}
	parts := strings.Split(p, "/")
	if parts[0] == "rooms" && len(parts) > 2 {
		return "rooms/" + parts[2]
	}
	return parts[0]
}

// KnownCalls are the calls whose metrics exist from the start, as URL
// paths: the connection check, the sync and posting.
var KnownCalls = []string{"/_matrix/client/v3/account/whoami", "/_matrix/client/v3/sync", "/_matrix/client/v3/rooms/!r/send/m.room.message/t"}
