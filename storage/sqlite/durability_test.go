package sqlite

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"hearth/storage"
	"hearth/storage/sqlstore"
)

// crashEnv names the database the crash helper writes to; the helper test does nothing
// without it.
const crashEnv = "HEARTH_STORAGE_CRASH_DB"

// crashWriters is how many goroutines the helper writes from, like concurrent requests.
const crashWriters = 4

// TestCrashHelper is not a test on its own: TestCrashRecovery runs the test binary again
// with only this test selected and crashEnv set, and SIGKILLs it while it writes. It
// writes like a busy server: each goroutine extends its own chain; each response gets
// three input items at creation and 1-10 output items at completion (the count is in
// its request JSON so the parent can check it); some are left queued or in_progress on
// purpose. After each commit it reports "completed <id>" on stdout.
func TestCrashHelper(t *testing.T) {
	path := os.Getenv(crashEnv)
	if path == "" {
		t.Skip("helper process for TestCrashRecovery")
	}
	round := os.Getenv(crashEnv + "_ROUND")
	db, err := Open(path)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	ctx := context.Background()
	var stdout sync.Mutex
	var wg sync.WaitGroup
	for g := range crashWriters {
		wg.Go(func() {
			prev := ""
			for i := 0; ; i++ {
				id := fmt.Sprintf("resp_r%s_g%d_%d", round, g, i)
				outputs := 1 + i%10
				status := storage.StatusInProgress
				if i%7 == 3 {
					status = storage.StatusQueued
				}
				err := db.CreateResponse(ctx, storage.NewResponse{
					ID: id, Owner: alice, Model: "m", Status: status, PreviousResponseID: prev,
					Request: request("m", fmt.Sprintf(`"outputs":%d`, outputs)), Body: body(id, string(status)),
					Input: []storage.Item{
						userMessage(id+"_in0", text(300, id)),
						userMessage(id+"_in1", text(200, id)),
						functionCall(id+"_in2", "calc", `{"expr":"1+1"}`),
					},
				})
				if err != nil {
					fmt.Println("error", err)
					os.Exit(2)
				}
				if status == storage.StatusQueued || i%5 == 4 {
					continue // left in flight: a worker that never got to it
				}
				out := make([]storage.Item, outputs)
				for k := range out {
					out[k] = assistantMessage(fmt.Sprintf("%s_out%d", id, k), text(300, id))
				}
				err = db.CompleteResponse(ctx, id, storage.Final{Status: storage.StatusCompleted, Body: body(id, "completed"),
					Usage: storage.Usage{InputTokens: 10, OutputTokens: int64(outputs)}, Output: out})
				if err != nil {
					fmt.Println("error", err)
					os.Exit(2)
				}
				prev = id
				stdout.Lock()
				fmt.Printf("completed %s\n", id)
				stdout.Unlock()
			}
		})
	}
	wg.Wait()
}

func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns and kills child processes")
	}
	path := filepath.Join(t.TempDir(), "hearth.db")
	ctx := context.Background()
	for round := 1; round <= 3; round++ {
		// Kill after a different amount of work each round, so the kill lands at
		// different points of the write loop.
		target := 25 + 40*round
		reported := runAndKill(t, path, round, target)
		if len(reported) < target {
			t.Fatalf("round %d: child reported only %d completions", round, len(reported))
		}

		db, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		n, err := db.RecoverInFlight(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Errorf("round %d: nothing recovered, but the helper leaves responses in flight", round)
		}
		checkAfterCrash(t, db, reported)
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: %d completions reported before SIGKILL, %d in-flight responses failed", round, len(reported), n)
	}
}

// runAndKill runs the helper until it has reported target completions, SIGKILLs it,
// and returns the ids it reported.
func runAndKill(t *testing.T, path string, round, target int) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnv+"="+path, fmt.Sprintf("%s_ROUND=%d", crashEnv, round))
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var reported []string
	timeout := time.After(2 * time.Minute)
loop:
	for len(reported) < target {
		select {
		case line, ok := <-lines:
			if !ok {
				break loop
			}
			if id, ok := strings.CutPrefix(line, "completed "); ok {
				reported = append(reported, id)
			} else if strings.HasPrefix(line, "error") {
				t.Errorf("helper: %s", line)
			}
		case <-timeout:
			t.Error("helper too slow")
			break loop
		}
	}
	// SIGKILL: no deferred function, no Close, no checkpoint; like a power cut for
	// the process, though not for the OS.
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	for range lines { // drain what was reported before the kill
	}
	cmd.Wait()
	return reported
}

func checkAfterCrash(t *testing.T, db *DB, reported []string) {
	t.Helper()
	ctx := context.Background()
	if err := db.IntegrityCheck(ctx); err != nil {
		t.Fatal(err)
	}
	var n int
	query := func(q string, args ...any) int {
		t.Helper()
		var n int
		if err := db.r.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n = query(`SELECT COUNT(*) FROM pragma_foreign_key_check`); n != 0 {
		t.Errorf("%d foreign key violations", n)
	}
	if n = query(`SELECT COUNT(*) FROM responses WHERE status IN ('queued', 'in_progress')`); n != 0 {
		t.Errorf("%d responses still in flight after recovery", n)
	}
	// Every completed response has exactly the output it was completed with; every
	// response has all three inputs it was created with; recovered ones have no output.
	if n = query(`SELECT COUNT(*) FROM responses r WHERE status = 'completed' AND
		json_extract(r.request, '$.outputs') != (SELECT COUNT(*) FROM items WHERE response_id = r.id AND kind = 'output')`); n != 0 {
		t.Errorf("%d completed responses with a wrong number of output items", n)
	}
	if n = query(`SELECT COUNT(*) FROM responses r WHERE
		(SELECT COUNT(*) FROM items WHERE response_id = r.id AND kind = 'input') != 3`); n != 0 {
		t.Errorf("%d responses without their 3 input items", n)
	}
	if n = query(`SELECT COUNT(*) FROM responses r WHERE status = 'failed' AND (error IS NOT ?
		OR EXISTS (SELECT 1 FROM items WHERE response_id = r.id AND kind = 'output'))`, string(sqlstore.RecoveredError)); n != 0 {
		t.Errorf("%d failed responses without the recovery error or with output", n)
	}
	if n = query(`SELECT COUNT(*) FROM responses WHERE status NOT IN ('completed', 'failed')`); n != 0 {
		t.Errorf("%d responses in an unexpected status", n)
	}
	// What the helper saw committed is there, and its chains load.
	last := map[string]string{} // goroutine prefix -> last reported id
	for _, id := range reported {
		r, err := db.GetResponse(ctx, alice, id)
		if err != nil {
			t.Fatalf("reported %s: %v", id, err)
		}
		if r.Status != storage.StatusCompleted {
			t.Errorf("reported %s: status %s", id, r.Status)
		}
		last[id[:strings.LastIndexByte(id, '_')]] = id
	}
	for _, id := range last {
		c, err := db.LoadChain(ctx, alice, id)
		if err != nil {
			t.Fatalf("chain of %s: %v", id, err)
		}
		for _, l := range c.Links {
			if l.Status != storage.StatusCompleted || len(l.Input) != 3 || len(l.Output) == 0 {
				t.Fatalf("chain of %s: link %s %s in=%d out=%d", id, l.ID, l.Status, len(l.Input), len(l.Output))
			}
			if got := ids(l.Input); !slices.Equal(got, []string{l.ID + "_in0", l.ID + "_in1", l.ID + "_in2"}) {
				t.Fatalf("link %s input %v", l.ID, got)
			}
		}
	}
}
