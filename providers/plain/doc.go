// Package plain runs agent CLIs whose print mode writes unstructured text:
// Antigravity (`agy --print`), Aider, Grok Build, Qwen Code in plain mode,
// DeepSeek TUI, AtomCode, Crush (`crush run`) and Continue CLI (`cn -p`,
// verified with 1.5.47 in CI: continue_e2e_test.go). See Command for each
// command line. JulesDescriptor describes Jules Tools for detection only.
//
// # Streaming
//
// Raw stdout is read in chunks (procrun.Session with Chunks) and emitted as
// one assistant.delta per output line, its newline included, as each line
// completes (a line longer than procrun.ChunkBytes in pieces of that size,
// a last unterminated line at exit), so Markdown paragraphs and blank lines
// survive and the deltas depend on the output only, not on how reads split
// it: a run reattached after a restart re-emits exactly what was recorded.
// Terminal escape sequences and carriage returns are dropped, and a delta
// never ends inside a UTF-8 character or an escape sequence (the rest waits
// for the next line). stderr is not shown: it is logged at debug level. The
// last 4 KiB of stdout, then the stderr tail, are used for failure messages.
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
//	cancelled ctx                     SIGINT to the CLI, its process group killed after
//	                                  StopGrace, run.interrupted; Run returns nil
//
// Prompts: Antigravity, Grok and DeepSeek take the prompt as one argument
// (refused beyond Options.ArgvLimit); Aider switches to --message-file for a
// long prompt; AtomCode always reads a private prompt file (removed after the
// run); Qwen, Continue and Crush read stdin.
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
// # Process
//
// The CLI runs on procrun.Session like every other agent: started with
// procrun.Start, so a relay in the run's context (the run survives a restart
// of the bot) and the host-agent isolation (the CLI runs as the agent user;
// a prompt file is handed to that user) apply, and a project chat's run
// goes into its container. Once the CLI exited its process group is killed,
// ending tools it left behind.
package plain
