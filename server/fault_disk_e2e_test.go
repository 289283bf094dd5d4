package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"hearth"
	"hearth/cmd/hearth/wire"
	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
	"hearth/server"
	"hearth/storage/sqlite"
)

// smallFS mounts a tmpfs of size bytes on a fresh directory and returns it. The faults
// below need a file system that really runs out of space or really is read-only: as
// root, file permissions and chattr do not stop writes through the descriptors SQLite
// already holds, so only the file system itself can refuse them. Tests skip where
// mounting is not allowed.
func smallFS(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v); the disk faults need one", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fill writes a file until the file system is full and returns its path.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v", dir, err)
			}
			break
		}
	}
	// A few bytes may still fit in the last page; take them too.
	for {
		if _, err := f.Write(chunk[:512]); err != nil {
			break
		}
	}
	return path
}

// truncateWAL checkpoints the database and truncates its write-ahead log, so that the
// next write must grow the log and allocate space: a full disk is then certain to be
// noticed, rather than absorbed by log pages SQLite reuses.
func truncateWAL(t *testing.T, path string) {
	t.Helper()
	c, err := sqlite.OpenRaw(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var busy, logPages, done int
	if err := c.QueryRow(`PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logPages, &done); err != nil {
		t.Fatal(err)
	}
	if busy != 0 {
		t.Fatalf("checkpoint blocked")
	}
}

func errorEnvelope(t *testing.T, b []byte) (typ, msg string) {
	t.Helper()
	var env struct {
		Error struct{ Type, Message string }
	}
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatalf("not an error envelope: %s", b)
	}
	return env.Error.Type, env.Error.Message
}

// hearthOnSmallFS serves hearth with its database on a fresh 16 MiB file system.
func hearthOnSmallFS(t *testing.T) (dir, dbPath string, db *sqlite.DB, srv *httptest.Server) {
	t.Helper()
	dir = smallFS(t, "16m")
	dbPath = filepath.Join(dir, "hearth.db")
	db, err := sqlite.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	srv = httptest.NewServer(wire.New(wire.Config{Runtime: testenv.Runtime(t), Database: db}))
	t.Cleanup(srv.Close)
	return dir, dbPath, db, srv
}

// databaseHealth returns /healthz's status and its database part.
func databaseHealth(t *testing.T, srv *httptest.Server) (int, struct {
	OK    bool   `json:"ok"`
	Error string `json:"error"`
}) {
	t.Helper()
	r, err := http.Get(srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var h struct {
		Database struct {
			OK    bool   `json:"ok"`
			Error string `json:"error"`
		} `json:"database"`
	}
	if err := json.NewDecoder(r.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	return r.StatusCode, h.Database
}

// TestDiskFullE2E: with the database's file system full, a request fails with a 507
// storage_full error envelope, /healthz says the database is not ok because storage
// is full, nothing already stored is damaged, and hearth serves (and reports healthy)
// again as soon as space is freed, without a restart.
func TestDiskFullE2E(t *testing.T) {
	dir, dbPath, db, srv := hearthOnSmallFS(t)
	plain := testenv.Model(t, scriptmodel.PlainModel)
	want := plain.Text(scriptmodel.EntryAssistant)

	before := createJSON(t, srv, reqBody(scriptmodel.PlainModel, false, `"input":"before the disk fills"`))
	if st, h := databaseHealth(t, srv); st != http.StatusOK || !h.OK {
		t.Fatalf("health before the disk fills: %d %+v", st, h)
	}

	truncateWAL(t, dbPath)
	filler := fill(t, dir)

	// A new response cannot even be recorded: a 507 before anything is generated.
	resp, b := post(t, srv.URL+"/v1/responses", reqBody(scriptmodel.PlainModel, false, `"input":"disk is full"`))
	if resp.StatusCode != http.StatusInsufficientStorage {
		t.Fatalf("JSON request on a full disk: %d %s; want 507", resp.StatusCode, b)
	}
	if code, _ := errCode(b); code != server.CodeStorageFull {
		t.Errorf("JSON request on a full disk: code %q, want %q: %s", code, server.CodeStorageFull, b)
	}
	if typ, msg := errorEnvelope(t, b); typ != hearth.ErrTypeServer || !strings.Contains(msg, "storage is full") {
		t.Errorf("JSON request on a full disk: error %q %q", typ, msg)
	}
	resp, b = post(t, srv.URL+"/v1/responses", reqBody(scriptmodel.PlainModel, true, `"input":"disk is full"`))
	if code, _ := errCode(b); resp.StatusCode != http.StatusInsufficientStorage || code != server.CodeStorageFull ||
		strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Errorf("stream request on a full disk: %d %s %s; want a 507 storage_full JSON error", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	// Reads still work, and what was stored is intact.
	if got := getStored(t, srv, before.ID); got.Status != hearth.StatusCompleted || got.Output[0].Text(hearth.PartOutputText) != want {
		t.Errorf("stored response on a full disk: %s %+v", got.Status, got.Output)
	}
	// Health says so while writes fail: the database answers reads, but is no use.
	if st, h := databaseHealth(t, srv); st != http.StatusServiceUnavailable || h.OK || !strings.Contains(h.Error, "storage full") {
		t.Errorf("health on a full disk: %d %+v; want 503, database not ok, storage full", st, h)
	}
	if st, h := databaseHealth(t, srv); st != http.StatusServiceUnavailable || h.OK {
		t.Errorf("health asked again on a full disk: %d %+v", st, h)
	}

	// Space comes back: health and hearth recover without a restart.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if st, h := databaseHealth(t, srv); st != http.StatusOK || !h.OK {
		t.Errorf("health once space is back: %d %+v", st, h)
	}
	after := createJSON(t, srv, reqBody(scriptmodel.PlainModel, false,
		`"input":"space again","previous_response_id":"`+before.ID+`"`))
	if after.Status != hearth.StatusCompleted || after.Output[0].Text(hearth.PartOutputText) != want {
		t.Errorf("after space returned: %s %+v", after.Status, after.Output)
	}
	if got := getStored(t, srv, after.ID); got.Status != hearth.StatusCompleted {
		t.Errorf("response after space returned stored as %s", got.Status)
	}
	if err := db.IntegrityCheck(context.Background()); err != nil {
		t.Error(err)
	}
}

// TestDiskFullMidStreamE2E: the disk fills while a response streams, so its result
// cannot be stored. The client must not be told it completed: the stream ends with
// error + response.failed + [DONE], and hearth recovers when space returns.
func TestDiskFullMidStreamE2E(t *testing.T) {
	dir, dbPath, db, srv := hearthOnSmallFS(t)
	_, long := testenv.BenchModel(t, scriptmodel.LongModel)
	createJSON(t, srv, reqBody(long, false, `"input":"warm up","max_output_tokens":16`))
	truncateWAL(t, dbPath)

	resp, err := http.Post(srv.URL+"/v1/responses", "application/json",
		strings.NewReader(reqBody(long, true, `"input":"a story while the disk fills"`)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var raw strings.Builder
	var id, filler string
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		raw.Write(buf[:n])
		if id == "" {
			for _, line := range strings.Split(raw.String(), "\n") {
				if id = responseIDOf(line); id != "" {
					break
				}
			}
		}
		if filler == "" && strings.Contains(raw.String(), "response.output_text.delta") {
			filler = fill(t, dir)
		}
		if err != nil {
			break
		}
	}
	body := raw.String()
	if filler == "" {
		t.Fatalf("the stream ended before any text: %s", body)
	}
	if !strings.HasSuffix(body, "event: response.failed\n"+lastData(body)+"\n\ndata: [DONE]\n\n") || !strings.Contains(body, "event: error\n") {
		t.Errorf("stream on a disk that filled up does not end with error, response.failed, [DONE]:\n%s", tailOf(body, 1500))
	}
	if strings.Contains(body, "event: response.completed") {
		t.Errorf("the client was told the response completed although it was not stored")
	}
	if !strings.Contains(lastData(body), "storage is full") {
		t.Errorf("response.failed does not say storage is full: %s", tailOf(lastData(body), 600))
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	// Once the disk has room again, the row says what the client was told: failed.
	deadline := time.Now().Add(time.Minute)
	stored := getStored(t, srv, id)
	for stored.Status != hearth.StatusFailed && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		stored = getStored(t, srv, id)
	}
	if stored.Status != hearth.StatusFailed {
		t.Errorf("stored status %s after space returned, want failed (as the client was told)", stored.Status)
	}
	if r := createJSON(t, srv, reqBody(scriptmodel.PlainModel, false, `"input":"space again"`)); r.Status != hearth.StatusCompleted {
		t.Errorf("after space returned: %s", r.Status)
	}
	if err := db.IntegrityCheck(context.Background()); err != nil {
		t.Error(err)
	}
}

func lastData(body string) string {
	body = strings.TrimSuffix(body, "\n\ndata: [DONE]\n\n")
	i := strings.LastIndex(body, "\ndata: ")
	if i < 0 {
		return ""
	}
	return body[i+1:]
}

func tailOf(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// TestReadOnlyDatabaseE2E: the data directory's file system is read-only (a disk
// remounted read-only after errors, a read-only volume). hearth cannot run without
// writing, so opening the database must fail with an error that says so, rather than
// start and fail every request; once the file system is writable again, the database
// opens intact. (A file system cannot be remounted read-only while SQLite holds its
// files open for writing, so the read-only fault is met at start; the full disk above
// is the fault a running hearth meets.)
func TestReadOnlyDatabaseE2E(t *testing.T) {
	dir := smallFS(t, "16m")
	dbPath := filepath.Join(dir, "hearth.db")
	db, err := sqlite.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(wire.New(wire.Config{Runtime: testenv.Runtime(t), Database: db}))
	before := createJSON(t, srv, reqBody(scriptmodel.PlainModel, false, `"input":"before read-only"`))
	srv.Close()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	if err := syscall.Mount("", dir, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount read-only: %v", err)
	}
	ro, err := sqlite.Open(dbPath)
	if err == nil {
		ro.Close()
		t.Fatalf("opening a database on a read-only file system succeeded")
	}
	// hearth serve exits with this error. SQLite reports the -wal file it cannot create
	// (a clean close removed it) as "unable to open database file: no such file or
	// directory", which does not name the cause; storage adds it.
	if !strings.Contains(err.Error(), "is not writable") {
		t.Errorf("open on a read-only file system: %v; want the error to say the directory is not writable", err)
	}

	if err := syscall.Mount("", dir, "", syscall.MS_REMOUNT, "size=16m"); err != nil {
		t.Fatalf("remount read-write: %v", err)
	}
	db, err = sqlite.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.IntegrityCheck(context.Background()); err != nil {
		t.Error(err)
	}
	srv = httptest.NewServer(wire.New(wire.Config{Runtime: testenv.Runtime(t), Database: db}))
	defer srv.Close()
	if got := getStored(t, srv, before.ID); got.Status != hearth.StatusCompleted {
		t.Errorf("stored response after read-only spell: %s", got.Status)
	}
	if r := createJSON(t, srv, reqBody(scriptmodel.PlainModel, false, `"input":"writable again","previous_response_id":"`+before.ID+`"`)); r.Status != hearth.StatusCompleted {
		t.Errorf("after the file system is writable again: %s", r.Status)
	}
}
