// Package plain runs agent CLIs whose print mode writes unstructured text:
// Antigravity (`agy --print`), Aider, Grok Build, Qwen Code in plain mode,
// DeepSeek TUI and AtomCode. See Command for each command line.
//
// # Streaming
//
// Raw stdout chunks are emitted as assistant.delta as they arrive, with no
// line splitting, so Markdown paragraphs and blank lines survive. Terminal
// escape sequences and carriage returns are dropped, and a chunk never ends
// inside a UTF-8 character or an escape sequence (the rest waits for the next
// chunk). stderr is not shown: it is logged at debug level. The last 4 KiB of
// stdout and stderr together are kept for failure messages.
//
// # Outcomes
//
// The adapter emits the terminal event itself:
//
//	exit 0 with output                run.completed (after session.updated, see below)
//	exit 0 without any output         run.failed "<CLI> exited without printing an answer: <tail>"
//	non-zero exit                     run.failed "<CLI> exited with status N: <tail>"
//	sign-in-looking output on failure system {subtype sign_in_required} + run.failed with
//	                                  the CLI's instruction (e.g. run `agy` once in a terminal)
//	argv-only CLI, prompt too long    run.failed; Run returns ErrPromptTooLarge (wrapped)
//	cancelled ctx                     SIGINT to the process group, kill after StopGrace,
//	                                  run.interrupted; Run returns nil
//
// Prompts: Antigravity, Grok and DeepSeek take the prompt as one argument
// (refused beyond Options.ArgvLimit); Aider switches to --message-file for a
// long prompt; AtomCode always reads a private prompt file (removed after the
// run); Qwen reads stdin.
//
// # Sessions
//
// Only Antigravity resumes (Options.ResumeFlag, default --resume, with the
// saved id). Print mode does not report a conversation id, so a fresh run
// snapshots the brain directory (~/.gemini/antigravity-cli/brain of the
// child's HOME, or Options.BrainDir) before and after: exactly one new valid
// session directory (a real directory, not a symlink, with a plain name)
// becomes session.updated just before run.completed; zero or several new
// directories are ambiguous and no session is saved. No CLI here forks: a
// Fork clears the resume id and the run starts fresh. The other CLIs keep no
// session: the prompt service sends the visible history.
//
// # Not procrun.Run
//
// procrun's runner reads stdout line by line and drops blank lines, which
// would lose Markdown structure, so this package starts the child with
// os/exec (same filtered environment via procrun.Environ, own process group).
package plain
