// std_test.go: the encoding/json-only decode the differential tests and
// BenchmarkParseReferenceStd compare the fast path with.

package codexharness

import "github.com/threadline-bot/threadline/providers/jsonrpc"

// stdDecodeLine is decodeLine with encoding/json alone.
func stdDecodeLine(line []byte) (jsonrpc.Message, params, error) { return decodeLineWith(line, true) }

// line is the notifLine json.Unmarshal gives (u made from d when unset).
func (n *notifDec) line() notifLine {
	l := notifLine{ID: n.id, Method: n.method}
	if n.params {
		l.Params = n.union()
	}
	return l
}
