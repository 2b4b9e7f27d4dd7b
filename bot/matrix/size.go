// size.go: how large one event the bot sends may be, and how much answer text
// one message takes. Matrix refuses an event whose whole PDU (content plus the
// fields the homeserver adds: auth and prev events, hashes, signatures) is
// over 65,536 bytes; Dendrite answers 413 M_BAD_JSON. An edit carries the text
// in m.new_content (the top-level fallback body is cut to 50 bytes by
// mautrix), as a plain body and an HTML formatted_body, so the answer text is
// in the event about twice; Megolm's base64 ciphertext adds a third.

package matrix

import (
	"bytes"
	"encoding/json"
)

const (
	// HardEventLimit is Matrix's limit of one event (the whole PDU).
	HardEventLimit = 65536
	// pduAllowance is what the homeserver adds around the content; Dendrite
	// 0.13.8 added 590 to 620 bytes (measured, short ids); a quarter more
	// room for long room and user ids.
	pduAllowance = 1024
	// MaxEventBytesLimit is the largest Config.MaxEventBytes.
	MaxEventBytesLimit = HardEventLimit - pduAllowance
	// MinEventBytes is the smallest Config.MaxEventBytes.
	MinEventBytes = 8 << 10
	// DefaultMaxEventBytes is the default bound of one event's content.
	DefaultMaxEventBytes = 48 << 10

	// viewReserve is the room PartLimit leaves in an event for what is not
	// answer text: the status line, the steps and plan, the hint, the
	// buttons (twice in an edit), the relation and the fallback body.
	viewReserve = 4 << 10
)

// PartLimit is the most bytes of answer (Markdown) one Matrix message should
// take, for events of at most maxEventBytes (0: the default): the text goes
// in twice (plain and HTML, and the HTML is a little longer), so about
// (maxEventBytes - 4 KiB) / 2.2, the 4 KiB for the status, steps, plan, hint
// and buttons. It is what chatops' RenderOptions.PartLimit should be for
// Matrix: 20,480 bytes by default, so a 20 KB answer is one message. A part
// whose HTML is unusually long (dense code) is sent without the HTML rather
// than split or cut (see fitWire).
func PartLimit(maxEventBytes int) int {
	if maxEventBytes <= 0 {
		maxEventBytes = DefaultMaxEventBytes
	}
	return max((maxEventBytes-viewReserve)*10/22, 1024)
}

// PartLimit is PartLimit of the bot's Config.MaxEventBytes.
func (b *Bot) PartLimit() int { return PartLimit(b.cfg.MaxEventBytes) }

// Megolm framing (mautrix crypto, goolm): the encrypted event is the
// canonical JSON of {"room_id","type","content"}, padded to the AES block,
// plus version, index, MAC and an Ed25519 signature, base64 without padding,
// in content with the algorithm, the sender key, the session and device ids
// and the relation in the clear.
const (
	megolmPlainExtra  = 128 // room_id and type around the content
	megolmFrame       = 16 + 8 + 8 + 64
	megolmOuterFields = 512
)

// wireSize is the size of content as the homeserver stores it: its canonical
// JSON (no HTML characters escaped, as in the PDU and in Megolm's
// plaintext), or in an encrypted room the Megolm event that carries it.
func wireSize(content any, encrypted bool) int {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(content); err != nil {
		return HardEventLimit + 1
	}
	n := buf.Len() - 1 // Encode's newline
	if encrypted {
		return ((n+megolmPlainExtra+megolmFrame)*4+2)/3 + megolmOuterFields
	}
	return n
}
