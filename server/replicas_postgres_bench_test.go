package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"hearth/cmd/hearth/wire"
	"hearth/internal/admission"
	"hearth/storage/postgres"
	"hearth/storage/postgres/pgtest"
)

// replicaClients is how many clients the replica benchmark runs at once.
const replicaClients = 64

// BenchmarkReplicasPostgres measures responses per second of 1, 2 and 3 hearth
// replicas on one PostgreSQL (a durable cluster of the benchmark's own on loopback),
// over the fake runtime, with 64 clients at once. Each client starts a conversation on
// one replica and continues it on the next (previous_response_id across replicas), so
// every second response loads its chain from the database. Admission is opened wide
// (64 slots per replica): the fake runtime costs nothing, and what is measured is
// hearth and the database. Reported: responses/s, p50 and p99 latency, and CPU per
// response of the hearth replicas (this process, the clients included) and of
// PostgreSQL (its server processes).
//
//	go test ./server -run '^$' -bench 'ReplicasPostgres(Fast)?$' -benchtime 3000x
//
// The replicas run in this one process, so they share its CPUs: on a small machine
// they show where the time goes (hearth's CPU against the database's), not how far
// separate hosts would scale.
func BenchmarkReplicasPostgres(b *testing.B) {
	benchmarkReplicas(b, pgtest.OwnDurable(b))
}

// BenchmarkReplicasPostgresFast is BenchmarkReplicasPostgres on the tests' cluster
// (fsync off): set beside the durable one, it shows what waiting for the disk costs.
func BenchmarkReplicasPostgresFast(b *testing.B) {
	benchmarkReplicas(b, pgtest.Own(b))
}

func benchmarkReplicas(b *testing.B, c *pgtest.Cluster) {
	b.Setenv("HEARTH_CONTEXT_LENGTH", "1048576")
	for _, n := range []int{1, 2, 3} {
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			u, err := c.CreateDatabase(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			bases := make([]string, n)
			for i := range n {
				db, err := postgres.OpenWith(context.Background(), u, postgres.Options{Replica: fmt.Sprint("replica-", i)})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { db.Close() })
				srv := httptest.NewServer(hearthOverFake(b, fakeRuntime{}, wire.Config{Database: db, Admission: admission.Config{Slots: replicaClients}}))
				b.Cleanup(srv.Close)
				bases[i] = srv.URL
			}
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: replicaClients}}
			post := func(base, body string) (string, error) {
				resp, err := client.Post(base+"/v1/responses", "application/json", strings.NewReader(body))
				if err != nil {
					return "", err
				}
				defer resp.Body.Close()
				raw, _ := io.ReadAll(resp.Body)
				var r struct {
					ID     string `json:"id"`
					Status string `json:"status"`
				}
				if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &r) != nil || r.Status != "completed" {
					return "", fmt.Errorf("%s: %s", resp.Status, raw)
				}
				return r.ID, nil
			}
			const model = `"model":"hearth-fake-128k","input":"What route would you suggest through the south of France?"`
			if _, err := post(bases[0], `{`+model+`}`); err != nil { // warm up
				b.Fatal(err)
			}

			var next atomic.Int64
			var mu sync.Mutex
			var lat []time.Duration
			var failed atomic.Value
			pgBefore := treeCPU(c.ServerPID())
			selfBefore := selfCPU()
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for k := range replicaClients {
				wg.Go(func() {
					var mine []time.Duration
					defer func() { mu.Lock(); lat = append(lat, mine...); mu.Unlock() }()
					prev := ""
					for i := 0; next.Add(1) <= int64(b.N); i++ {
						body := `{` + model + `}`
						if prev != "" {
							body = `{` + model + `,"previous_response_id":"` + prev + `"}`
						}
						t := time.Now()
						id, err := post(bases[(k+i)%n], body)
						mine = append(mine, time.Since(t))
						if err != nil {
							failed.Store(err)
							return
						}
						if prev == "" {
							prev = id
						} else {
							prev = ""
						}
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			if err, _ := failed.Load().(error); err != nil {
				b.Fatal(err)
			}
			pg, self := treeCPU(c.ServerPID())-pgBefore, selfCPU()-selfBefore
			slices.Sort(lat)
			q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))]) / 1e6 }
			b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "responses/s")
			b.ReportMetric(q(0.5), "p50-ms")
			b.ReportMetric(q(0.99), "p99-ms")
			b.ReportMetric(float64(self)/float64(len(lat))/1e6, "hearth-cpu-ms/resp")
			b.ReportMetric(float64(pg)/float64(len(lat))/1e6, "pg-cpu-ms/resp")
		})
	}
}

// selfCPU is this process's user and system CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// treeCPU is the CPU time of process pid and its children now running (PostgreSQL's
// postmaster and its backends), from /proc; 0 where there is no /proc.
func treeCPU(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	const tick = time.Second / 100 // USER_HZ on Linux
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	var total time.Duration
	for _, p := range dirs {
		raw, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(raw, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(raw[i+1:])) // f[0] is field 3 (state)
		if len(f) < 13 {
			continue
		}
		self, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		ppid, _ := strconv.Atoi(f[1])
		if self != pid && ppid != pid {
			continue
		}
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		total += time.Duration(ut+st) * tick
	}
	return total
}
