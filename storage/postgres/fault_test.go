package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"hearth/storage"
	"hearth/storage/postgres/pgtest"
	"hearth/storage/storetest"
)

// TestDatabaseRestart takes the database down under an open store and brings it back:
// while it is down, Ping and writes fail, ChainEpoch answers numbers it never answered
// (so nothing cached is trusted), and nothing is half-written; once it is back, the same
// store serves again without being reopened.
func TestDatabaseRestart(t *testing.T) {
	c := pgtest.Own(t) // a cluster of its own: taking it down disturbs no other test
	if !c.Owned() {
		t.Skip("the server HEARTH_TEST_POSTGRES names is not this test's to restart")
	}
	u, err := c.CreateDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	db, err := OpenWith(context.Background(), u, Options{Replica: "a"})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	storetest.Turn(t, db, "alice", "resp_1", "", []storage.Item{storetest.UserMessage("msg_1", "Hi")}, nil)
	e0 := db.ChainEpoch()

	up, err := c.Down()
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Ping(ctx); !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("Ping of a stopped database: %v; want storage.ErrUnavailable", err)
	}
	if _, err := db.GetResponse(ctx, "alice", "resp_1"); !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("GetResponse while down: %v; want storage.ErrUnavailable", err)
	}
	if e1, e2 := db.ChainEpoch(), db.ChainEpoch(); e1 == e0 || e1 == e2 {
		t.Errorf("ChainEpoch while down = %d, %d (before: %d); want numbers never answered before", e1, e2, e0)
	}
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	err = db.CreateResponse(short, storage.NewResponse{ID: "resp_2", Owner: "alice", Model: "m",
		Status: storage.StatusInProgress, PreviousResponseID: "resp_1", Request: storetest.Request("m", "")})
	cancel()
	if !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("CreateResponse while down: %v; want storage.ErrUnavailable", err)
	}

	if err := up(); err != nil {
		t.Fatal(err)
	}
	// The pool's connections broke with the server; the store makes new ones.
	deadline := time.Now().Add(10 * time.Second)
	for db.Ping(ctx) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("Ping after the database came back: %v", db.Ping(ctx))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if e := db.ChainEpoch(); e != e0 {
		t.Errorf("ChainEpoch after the database came back = %d, want %d as before", e, e0)
	}
	if _, err := db.GetResponse(ctx, "alice", "resp_2"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("the write that failed while down left a row: %v", err)
	}
	storetest.Turn(t, db, "alice", "resp_2", "resp_1", []storage.Item{storetest.UserMessage("msg_2", "Again")}, nil)
	if ch, err := db.LoadChain(ctx, "alice", "resp_2"); err != nil || len(ch.Links) != 2 {
		t.Fatalf("chain after the database came back: %v, %v", ch, err)
	}
}

// TestClassify: the SQLSTATEs and connection failures that say the database cannot
// serve for now are ErrUnavailable, a full disk is ErrFull, and a statement's own
// errors and the caller's context stay what they are.
func TestClassify(t *testing.T) {
	for _, c := range []struct {
		err  error
		want error
	}{
		{&pgconn.PgError{Code: "53100"}, storage.ErrFull},
		{&pgconn.PgError{Code: "57P01"}, storage.ErrUnavailable},
		{&pgconn.PgError{Code: "57P03"}, storage.ErrUnavailable},
		{&pgconn.PgError{Code: "08006"}, storage.ErrUnavailable},
		{&pgconn.PgError{Code: "25006"}, storage.ErrUnavailable},
		{fmt.Errorf("read: %w", io.ErrUnexpectedEOF), storage.ErrUnavailable},
		{&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, storage.ErrUnavailable},
		{&pgconn.PgError{Code: "23505"}, nil},
		{pgx.ErrNoRows, nil},
		{context.DeadlineExceeded, nil},
	} {
		got := classify(c.err)
		if !errors.Is(got, c.err) {
			t.Errorf("classify(%v) = %v, lost the cause", c.err, got)
		}
		for _, s := range []error{storage.ErrFull, storage.ErrUnavailable} {
			if errors.Is(got, s) != (s == c.want) {
				t.Errorf("classify(%v) = %v; errors.Is %v = %v", c.err, got, s, !(s == c.want))
			}
		}
	}
}
