// Package matrix is Threadline's Matrix front-end: a bot account on any
// homeserver (mautrix-go v0.32.0, an ordinary client with /sync, no
// appservice) that turns Matrix rooms and threads into chatops chats.
//
// # What people do
//
//   - Invite the bot: it joins when the inviter may use it (chatops policy,
//     the room's allow list or an admin) and declines other invites.
//   - Mention it (m.mentions, its display name or user id) or write
//     "!threadline <command or request>". Each Matrix thread is a chat
//     (m.thread, or io.element.thread, which Element writes where the
//     homeserver does not advertise threads; the bot answers in the relation
//     the thread's people write: threadrel.go); a mention outside a thread
//     starts a thread on that message.
//   - The answer is one m.notice in the thread, edited in place (m.replace,
//     always relative to the original event) with m.new_content carrying a
//     plain body and an HTML formatted_body rendered from Markdown by
//     goldmark. The shared chatops renderer throttles the edits and splits a
//     long answer into follow-up messages of PartLimit bytes (about 20 KB);
//     each event stays within Config.MaxEventBytes (48 KiB by default) as the
//     homeserver stores it (size.go). Tool steps are list items where they
//     ran in the text, the agent's plan an ordered list (steps.go). The
//     bot shows a typing notice while a run streams.
//   - Approval and question cards are notices listing the choices; the bot
//     seeds the reactions ✅ approve, 🔁 approve for the session, ❌ decline,
//     ⏹ stop (1️⃣… for options). Replies in the thread work too: approve,
//     deny, an option's number, or free text for a question that accepts it
//     (Question.AllowOther, or no options; a question that takes only its
//     options answers other text with a notice listing them, and the card
//     says which). Only approvers count; others get a notice. chatops edits
//     the card to show the outcome.
//   - A question's options are also a native poll (MSC3381) under the card;
//     approvers' votes answer it, and the poll is ended once the card is
//     answered (polls.go).
//
// # Encryption
//
// With Config.Encryption the bot uses mautrix's cryptohelper with goolm, the
// pure-Go Olm/Megolm, so no cgo or libolm is needed; its keys (crypto_* and
// mx_* tables) live in Threadline's own database (Postgres, or SQLite through
// dbutil) and survive restarts, as does the device (matrix_accounts). goolm is
// selected by the build tag: build and test with -tags goolm. A build without
// the tag compiles and runs unencrypted; asking it for encryption fails with
// ErrEncryptionUnavailable. An event the bot cannot decrypt gets a notice.
//
// # Limits and restarts
//
// A 429 M_LIMIT_EXCEEDED is waited out for the retry_after_ms of its body (or
// Retry-After) inside the call, up to Config.RateLimitWait; a longer wait is
// returned as a chatops.RateLimitError so the renderer pauses. After a restart
// chatops resumes the rendering of open runs and edits the same messages; the
// /sync position and the device are kept, so events that arrived meanwhile
// are handled, each once (chatops' seen events).
package matrix
