package sqlite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/mattn/go-sqlite3"

	"hearth/storage"
)

// filledDB creates a database at path with n responses of three realistic items each,
// and closes it (its write-ahead log checkpointed into the file).
func filledDB(t *testing.T, path string, n int) []string {
	t.Helper()
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var idList []string
	for i := range n {
		id := fmt.Sprintf("resp_%05d", i)
		turn(t, db, alice, id, "", []storage.Item{userMessage(id+"_u", text(190, id))},
			[]storage.Item{reasoning(id+"_r", text(190, id)), assistantMessage(id+"_a", text(180, id))})
		idList = append(idList, id)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return idList
}

// flip inverts size bytes of the file at path from offset off.
func flip(t *testing.T, path string, off, size int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, size)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] ^= 0xff
	}
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// TestQuickCheckFindsFlippedPage: 4 KB inverted in the middle of a database with data
// is found at open or by QuickCheck, as ErrCorrupt.
func TestQuickCheckFindsFlippedPage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hearth.db")
	filledDB(t, path, 300)
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.QuickCheck(context.Background()); err != nil {
		t.Fatalf("intact database: %v", err)
	}
	db.Close()

	st, _ := os.Stat(path)
	flip(t, path, st.Size()/2/4096*4096, 4096)
	db, err = Open(path)
	if err == nil {
		err = db.QuickCheck(context.Background())
		db.Close()
	}
	if !errors.Is(err, storage.ErrCorrupt) {
		t.Fatalf("damaged database: %v, want ErrCorrupt", err)
	}
}

// TestCorruptionSeenAtRunTime: a page damaged while hearth runs is noticed by the first
// query that reads it; from then on Ping fails, so /healthz reports it.
func TestCorruptionSeenAtRunTime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hearth.db")
	idList := filledDB(t, path, 300)
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if err := db.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	// Every page but the first (the schema, which the open has read) is damaged.
	st, _ := os.Stat(path)
	flip(t, path, 4096, st.Size()-4096)
	var seen error
	for _, id := range idList {
		if _, err := db.GetResponse(ctx, alice, id); err != nil {
			seen = err
			break
		}
	}
	if !errors.Is(seen, storage.ErrCorrupt) {
		t.Fatalf("reading a damaged page: %v, want ErrCorrupt", seen)
	}
	if err := db.Ping(ctx); !errors.Is(err, storage.ErrCorrupt) {
		t.Errorf("Ping after a corruption error: %v, want ErrCorrupt", err)
	}
}

// TestFilesArePrivate: a new database and its -wal and -shm files are 0600 whatever the
// umask, an existing looser one is tightened, and so is a looser data directory.
func TestFilesArePrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "hearth.db")
	check := func(when string) {
		t.Helper()
		if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("%s: data directory mode %v (%v), want 0700", when, st.Mode().Perm(), err)
		}
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			st, err := os.Stat(p)
			if err != nil {
				t.Errorf("%s: %v", when, err)
				continue
			}
			if st.Mode().Perm() != 0o600 {
				t.Errorf("%s: %s mode %v, want 0600", when, filepath.Base(p), st.Mode().Perm())
			}
		}
	}
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	turn(t, db, alice, "resp_1", "", nil, []storage.Item{assistantMessage("m", "hi")})
	check("new database")
	db.Close()

	for _, p := range []string{dir, path} {
		os.Chmod(p, 0o755)
	}
	db, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	turn(t, db, alice, "resp_2", "", nil, []storage.Item{assistantMessage("m", "hi")})
	check("reopened looser database")
}

func TestIsFull(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{sqlite3.Error{Code: sqlite3.ErrFull}, true},
		{fmt.Errorf("commit: %w", sqlite3.Error{Code: sqlite3.ErrFull}), true},
		{sqlite3.Error{Code: sqlite3.ErrIoErr, ExtendedCode: sqlite3.ErrIoErrFsync, SystemErrno: syscall.ENOSPC}, true},
		{sqlite3.Error{Code: sqlite3.ErrIoErr, ExtendedCode: sqlite3.ErrIoErrWrite, SystemErrno: syscall.EDQUOT}, true},
		{&os.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC}, true},
		{sqlite3.Error{Code: sqlite3.ErrIoErr, SystemErrno: syscall.EIO}, false},
		{sqlite3.Error{Code: sqlite3.ErrCorrupt}, false},
		{sqlite3.Error{Code: sqlite3.ErrReadonly}, false},
		{errors.New("database or disk is full"), false},
	} {
		if got := isFull(tc.err); got != tc.want {
			t.Errorf("isFull(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestSeenUnavailable: an I/O error other than a full disk, a file that cannot be
// opened and one that turned read-only are ErrUnavailable (retry later), as a
// PostgreSQL server that is down; a full disk stays ErrFull, damage ErrCorrupt.
func TestSeenUnavailable(t *testing.T) {
	db := &DB{}
	for _, tc := range []struct {
		err  error
		want error
	}{
		{sqlite3.Error{Code: sqlite3.ErrIoErr, ExtendedCode: sqlite3.ErrIoErrRead, SystemErrno: syscall.EIO}, storage.ErrUnavailable},
		{sqlite3.Error{Code: sqlite3.ErrCantOpen}, storage.ErrUnavailable},
		{fmt.Errorf("commit: %w", sqlite3.Error{Code: sqlite3.ErrReadonly}), storage.ErrUnavailable},
		{sqlite3.Error{Code: sqlite3.ErrIoErr, ExtendedCode: sqlite3.ErrIoErrWrite, SystemErrno: syscall.ENOSPC}, storage.ErrFull},
		{sqlite3.Error{Code: sqlite3.ErrCorrupt}, storage.ErrCorrupt},
		{sqlite3.Error{Code: sqlite3.ErrConstraint}, nil},
	} {
		got := db.seen(tc.err)
		for _, s := range []error{storage.ErrUnavailable, storage.ErrFull, storage.ErrCorrupt} {
			if errors.Is(got, s) != (s == tc.want) {
				t.Errorf("seen(%v) = %v; want it to wrap %v", tc.err, got, tc.want)
			}
		}
	}
}

// TestFullDiskSeenAndRecovered: a write that fails for want of space is ErrFull and
// makes Ping report it; once space is freed, Ping is fine again before any write has
// been tried, and writes work. The file system is a small tmpfs that really fills.
func TestFullDiskSeenAndRecovered(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=8m"); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v)", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	db, err := Open(filepath.Join(dir, "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if _, _, err := db.CreateKey(ctx, "before"); err != nil {
		t.Fatal(err)
	}
	// The next write must grow the log: a full disk is then certain to be met.
	if _, err := db.w.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	for chunk := make([]byte, 64<<10); ; {
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	for {
		if _, err := f.Write(make([]byte, 512)); err != nil {
			break
		}
	}
	f.Close()

	if err := db.Ping(ctx); err != nil {
		t.Errorf("Ping before any write failed: %v", err)
	}
	_, _, err = db.CreateKey(ctx, "full")
	if !errors.Is(err, storage.ErrFull) {
		t.Fatalf("CreateKey on a full disk: %v, want ErrFull", err)
	}
	if err := db.Ping(ctx); !errors.Is(err, storage.ErrFull) {
		t.Errorf("Ping on a full disk: %v, want ErrFull", err)
	}
	if keys, err := db.ListKeys(ctx); err != nil || len(keys) != 1 {
		t.Errorf("reads on a full disk: %d keys, %v", len(keys), err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := db.Ping(ctx); err != nil {
		t.Errorf("Ping once space is back: %v", err)
	}
	if _, _, err := db.CreateKey(ctx, "after"); err != nil {
		t.Errorf("CreateKey once space is back: %v", err)
	}
}
