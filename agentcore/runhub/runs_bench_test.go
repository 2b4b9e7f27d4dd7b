// The production-shape store benchmark (issue 19, target 3): N concurrent runs,
// each streaming its events one after another as the prompt service persists
// them (json.Marshal of the agent event, then Hub.Enqueue), with a live
// subscriber per chat, on Postgres and SQLite, with and without a CPU hog beside.

package runhub_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// pacedRate is the events/s of each run in the paced mode: a fast stream.
const pacedRate = 300

// hogEnv makes the test binary a CPU hog (TestMain) instead of running tests.
const hogEnv = "RUNHUB_BENCH_CPU_HOG"

func TestMain(m *testing.M) {
	if os.Getenv(hogEnv) == "1" {
		hog()
	}
	os.Exit(m.Run())
}

// hog keeps GOMAXPROCS goroutines busy until its stdin closes, then exits.
func hog() {
	for range runtime.GOMAXPROCS(0) {
		go func() {
			x := uint64(1)
			for {
				x = x*6364136223846793005 + 1442695040888963407
				if x == 0 {
					fmt.Fprint(io.Discard, x)
				}
			}
		}()
	}
	fmt.Println("hogging")
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// startHog runs the test binary as a CPU hog in a child process until the
// benchmark ends.
func startHog(b *testing.B) {
	b.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), hogEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = stdin.Close() // the hog exits at EOF
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "hogging\n" {
		b.Fatalf("cpu hog did not start: %q, %v", line, err)
	}
}

// BenchmarkRuns: runs=N concurrent runs over N chats, each appending b.N/N
// events one after another as the prompt service does, through the hub, with
// one live subscriber per chat: "pipelined" queues each event (Hub.Enqueue, the
// service's path), "append" waits for each commit (Hub.Append, the service's
// path before pipelining), "paced" (100 runs) pipelines at pacedRate events/s
// per run, 30,000/s in all, to show the latency at that load rather than at
// saturation. "cpuhog" runs the same beside GOMAXPROCS busy
// goroutines in another process. It reports events/s, cpu-us/event (this
// process's user+system CPU time over the events; the database's own CPU is
// not in it) and p99-ms, the latency from the append to its delivery by the
// chat's subscriber, with the mean events per commit and the longest commit.
func BenchmarkRuns(b *testing.B) {
	for _, dialect := range storetest.Dialects {
		b.Run(dialect, func(b *testing.B) {
			s := storetest.Open(b, dialect)
			for _, runs := range []int{1, 10, 100} {
				modes := []string{"pipelined", "append"}
				if runs == 100 {
					modes = append(modes, "paced")
				}
				for _, mode := range modes {
					for _, load := range []string{"idle", "cpuhog"} {
						b.Run(fmt.Sprintf("runs=%d/%s/%s", runs, mode, load), func(b *testing.B) {
							if load == "cpuhog" {
								startHog(b)
							}
							var rate float64
							if mode == "paced" {
								rate = pacedRate
							}
							benchRuns(b, s, runs, mode != "append", rate)
						})
					}
				}
			}
		})
	}
}

// benchRuns runs the benchmark; rate > 0 paces each run at rate events/s
// (behind its schedule, a run appends at once to catch up).
func benchRuns(b *testing.B, s *store.Store, runs int, pipelined bool, rate float64) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		commitMu sync.Mutex
		commits  []time.Duration
		batched  int
	)
	h := runhub.New(s, nil, runhub.Options{Persisted: func(events int, took time.Duration) {
		commitMu.Lock()
		commits = append(commits, took)
		batched += events
		commitMu.Unlock()
	}})
	defer h.Close()
	round := benchRunSeq.Add(1)
	chats := make([]agent.ChatID, runs)
	for i := range chats {
		chats[i] = agent.ChatID(fmt.Sprintf("runs-%d-%d", round, i))
	}
	createChats(b, s, chats...)
	// share[i] is the number of events run i appends; they add up to b.N.
	share := make([]int, runs)
	for i := range share {
		share[i] = b.N / runs
		if i < b.N%runs {
			share[i]++
		}
	}
	var (
		subs sync.WaitGroup
		lat  = make([][]time.Duration, runs)
	)
	for i, c := range chats {
		if share[i] == 0 {
			continue
		}
		ch := h.Subscribe(ctx, c, 0)
		lat[i] = make([]time.Duration, 0, share[i])
		subs.Go(func() {
			for e := range ch {
				lat[i] = append(lat[i], time.Since(e.At))
				if e.Seq == int64(share[i]) {
					return
				}
			}
		})
	}
	leases := make([]*runhub.Lease, runs)
	for i, c := range chats {
		l, err := h.Acquire(ctx, runhub.RunRecord{ID: agent.RunID(c + "-run"), ChatID: c, Agent: "claude"})
		if err != nil {
			b.Fatal(err)
		}
		leases[i] = l
	}
	text := "a typical streamed delta of an answer, some forty bytes"
	var before syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for i, c := range chats {
		wg.Go(func() {
			for n := range share[i] {
				if rate > 0 {
					time.Sleep(time.Until(start.Add(time.Duration(float64(n) / rate * float64(time.Second)))))
				}
				// What prompt.Service.persist does with each provider event.
				p, err := json.Marshal(agent.Event{Type: agent.EventAssistantDelta, Text: text})
				if err != nil {
					b.Error(err)
					return
				}
				run, typ := leases[i].Run().ID, string(agent.EventAssistantDelta)
				if pipelined {
					err = h.Enqueue(ctx, c, run, typ, p, func(_ runhub.Event, err error) {
						if err != nil {
							b.Error(err)
						}
					})
				} else {
					_, err = h.Append(ctx, c, run, typ, p)
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	subs.Wait() // every event delivered
	elapsed := time.Since(start)
	b.StopTimer()
	var after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	for _, l := range leases {
		if err := l.Release(ctx, runhub.StatusCompleted, nil, ""); err != nil {
			b.Error(err)
		}
	}
	all := slices.Concat(lat...)
	if len(all) != b.N {
		b.Fatalf("%d of %d events delivered", len(all), b.N)
	}
	slices.Sort(all)
	cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/event")
	b.ReportMetric(float64(all[min(len(all)-1, len(all)*99/100)].Microseconds())/1000, "p99-ms")
	commitMu.Lock()
	defer commitMu.Unlock()
	slices.Sort(commits)
	b.ReportMetric(float64(batched)/float64(len(commits)), "events/commit")
	b.ReportMetric(float64(commits[len(commits)-1].Microseconds())/1000, "max-commit-ms")
	b.ReportMetric(0, "ns/op")
}
