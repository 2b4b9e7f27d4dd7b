// Package shipgate is the push gate as pure functions: given what a branch
// adds (a unified diff, or changed files with their new contents) it returns
// the findings that should stop the push, and the caller decides (refuse,
// ask an approver, tell the chat). Nothing here runs git, reads files or
// logs.
//
// Rules, each a Rule in a Finding that names the file and, for text, the
// line:
//
//   - secret-value: an added line holds the value of a configured secret (a
//     bot token, a project secret), matched exactly by the caller's Secrets,
//     which is agentcore/redact's Redactor, so the push gate and the
//     redactor agree on what a secret is.
//   - one rule per entry of Patterns: private key blocks, AWS access keys,
//     GitHub, Slack, Anthropic and OpenAI tokens. The table is exported so
//     that the send_file gate and the redactor can share it.
//   - size-limit: a file larger than the limit (DefaultMaxSize); binary
//     files count by their size.
//   - unknown-size: a binary file whose size the input does not give (a diff
//     made without --binary and no Size from the caller); the gate cannot
//     clear it.
//
// Only added content counts: a secret a change removes is no finding. A
// finding's excerpt never holds the secret: configured values and pattern
// matches are masked before the line is shortened.
//
// Input: ParseDiff reads `git diff --binary <base>...<branch>` (or without
// --binary, or a plain unified diff) into Files; NewFile makes one from a
// file's path and new contents. Check runs the rules over Files; CheckDiff
// does both.
package shipgate
