package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"hearth/storage"
)

// consoleBase is when the console tests' responses are created: fixed, so that lists
// and usage buckets are known.
var consoleBase = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

// storeAt stores a finished response of owner created at consoleBase+at.
func storeAt(t *testing.T, db storage.Store, owner, id, prev, model string, at time.Duration, usage storage.Usage) {
	t.Helper()
	err := db.StoreResponse(context.Background(), storage.NewResponse{
		ID: id, Owner: owner, Model: model, Status: storage.StatusInProgress, PreviousResponseID: prev,
		Request: Request(model, ""), Input: []storage.Item{UserMessage(id+"_u", "q")}, CreatedAt: consoleBase.Add(at),
	}, storage.Final{Status: storage.StatusCompleted, Body: Body(id, "completed"), Usage: usage,
		Output: []storage.Item{AssistantMessage(id+"_a", "a")}, CompletedAt: consoleBase.Add(at + time.Second)})
	if err != nil {
		t.Fatal(err)
	}
}

func responseIDs(rows []*storage.Response) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.ID
	}
	return out
}

// testConsoleResponses: the console's list crosses owners, newest first, without
// bodies; its filters select; its pages, by keyset cursor, cover every row once.
func testConsoleResponses(t *testing.T, open Opener) {
	db := open(t)
	ctx := context.Background()
	storeAt(t, db, alice, "resp_1", "", "m1", 1*time.Minute, storage.Usage{})
	storeAt(t, db, bob, "resp_2", "", "m2", 2*time.Minute, storage.Usage{})
	storeAt(t, db, alice, "resp_3", "resp_1", "m1", 3*time.Minute, storage.Usage{})
	storeAt(t, db, alice, "resp_4", "", "m2", 4*time.Minute, storage.Usage{})
	if err := db.CreateResponse(ctx, storage.NewResponse{ID: "resp_5", Owner: bob, Model: "m1", Status: storage.StatusQueued,
		Request: Request("m1", ""), CreatedAt: consoleBase.Add(5 * time.Minute)}); err != nil {
		t.Fatal(err)
	}

	all, more, err := db.ConsoleResponses(ctx, storage.ConsoleFilter{})
	if err != nil || more || !slices.Equal(responseIDs(all), []string{"resp_5", "resp_4", "resp_3", "resp_2", "resp_1"}) {
		t.Fatalf("all: %v more=%v (%v)", responseIDs(all), more, err)
	}
	if r := all[2]; r.Owner != alice || r.Model != "m1" || r.Status != storage.StatusCompleted || r.PreviousResponseID != "resp_1" ||
		!r.CreatedAt.Equal(consoleBase.Add(3*time.Minute)) || r.Body != nil || r.Request != nil {
		t.Errorf("resp_3 listed as %+v", r)
	}
	for name, c := range map[string]struct {
		f    storage.ConsoleFilter
		want []string
	}{
		"owner":  {storage.ConsoleFilter{Owner: bob}, []string{"resp_5", "resp_2"}},
		"model":  {storage.ConsoleFilter{Model: "m2"}, []string{"resp_4", "resp_2"}},
		"status": {storage.ConsoleFilter{Status: storage.StatusQueued}, []string{"resp_5"}},
		"since/until": {storage.ConsoleFilter{Since: consoleBase.Add(2 * time.Minute), Until: consoleBase.Add(4 * time.Minute)},
			[]string{"resp_3", "resp_2"}},
		"owner and model": {storage.ConsoleFilter{Owner: alice, Model: "m1"}, []string{"resp_3", "resp_1"}},
	} {
		rows, _, err := db.ConsoleResponses(ctx, c.f)
		if err != nil || !slices.Equal(responseIDs(rows), c.want) {
			t.Errorf("%s: %v (%v), want %v", name, responseIDs(rows), err, c.want)
		}
	}

	var paged []string
	f := storage.ConsoleFilter{Limit: 2}
	for page := 0; ; page++ {
		rows, more, err := db.ConsoleResponses(ctx, f)
		if err != nil || page > 3 {
			t.Fatalf("page %d: %v", page, err)
		}
		paged = append(paged, responseIDs(rows)...)
		if !more {
			break
		}
		last := rows[len(rows)-1]
		f.AfterCreated, f.AfterID = last.CreatedAt, last.ID
	}
	if !slices.Equal(paged, responseIDs(all)) {
		t.Errorf("pages of 2: %v, want %v", paged, responseIDs(all))
	}
}

// testConsoleChain: the console shows the whole tree a response belongs to, from its
// root, branches included, in creation order, with items; across owners.
func testConsoleChain(t *testing.T, open Opener) {
	db := open(t)
	ctx := context.Background()
	storeAt(t, db, alice, "resp_1", "", "m", 1*time.Minute, storage.Usage{})
	storeAt(t, db, alice, "resp_2", "resp_1", "m", 2*time.Minute, storage.Usage{})
	storeAt(t, db, alice, "resp_3", "resp_2", "m", 3*time.Minute, storage.Usage{})
	storeAt(t, db, alice, "resp_4", "resp_2", "m", 4*time.Minute, storage.Usage{}) // a branch
	storeAt(t, db, alice, "resp_x", "", "m", 5*time.Minute, storage.Usage{})       // another tree
	for _, from := range []string{"resp_1", "resp_3", "resp_4"} {
		turns, err := db.ConsoleChain(ctx, from)
		if err != nil {
			t.Fatalf("from %s: %v", from, err)
		}
		var got []string
		for _, tu := range turns {
			got = append(got, tu.ID)
			if !slices.Equal(IDs(tu.Input), []string{tu.ID + "_u"}) || !slices.Equal(IDs(tu.Output), []string{tu.ID + "_a"}) {
				t.Errorf("from %s: %s has items %v / %v", from, tu.ID, IDs(tu.Input), IDs(tu.Output))
			}
		}
		if !slices.Equal(got, []string{"resp_1", "resp_2", "resp_3", "resp_4"}) {
			t.Errorf("from %s: %v", from, got)
		}
	}
	// Created within the same second (the API's created_at), a turn still comes after
	// the one it continues, whatever their ids.
	storeAt(t, db, alice, "resp_z", "", "m", 6*time.Minute, storage.Usage{})
	storeAt(t, db, alice, "resp_y", "resp_z", "m", 6*time.Minute, storage.Usage{})
	if turns, err := db.ConsoleChain(ctx, "resp_y"); err != nil || len(turns) != 2 || turns[0].ID != "resp_z" || turns[1].ID != "resp_y" {
		t.Errorf("a parent and its child of the same second: %v, %d turns", err, len(turns))
	}
	if _, err := db.ConsoleChain(ctx, "resp_nope"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("unknown id: %v, want ErrNotFound", err)
	}
}

// testConsoleUsage: tokens are summed per bucket, owner and model, oldest bucket
// first, from since on.
func testConsoleUsage(t *testing.T, open Opener) {
	db := open(t)
	ctx := context.Background()
	u := storage.Usage{InputTokens: 100, OutputTokens: 20, CachedTokens: 80, ReasoningTokens: 5}
	storeAt(t, db, alice, "resp_0", "", "m1", -30*time.Minute, u) // before since
	storeAt(t, db, alice, "resp_1", "", "m1", 10*time.Minute, u)
	storeAt(t, db, alice, "resp_2", "", "m1", 20*time.Minute, u)
	storeAt(t, db, bob, "resp_3", "", "m2", 30*time.Minute, u)
	storeAt(t, db, alice, "resp_4", "", "m1", 70*time.Minute, u)
	storeAt(t, db, alice, "resp_5", "", "m2", 40*time.Minute, u)
	got, err := db.ConsoleUsage(ctx, consoleBase, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	key := func(start time.Time, owner, model string) string {
		return fmt.Sprint(start.UTC().Format(time.RFC3339), " ", owner, " ", model)
	}
	want := map[string]storage.UsageBucket{
		key(consoleBase, alice, "m1"):                {Responses: 2, Usage: storage.Usage{InputTokens: 200, OutputTokens: 40, CachedTokens: 160, ReasoningTokens: 10}},
		key(consoleBase, alice, "m2"):                {Responses: 1, Usage: u},
		key(consoleBase, bob, "m2"):                  {Responses: 1, Usage: u},
		key(consoleBase.Add(time.Hour), alice, "m1"): {Responses: 1, Usage: u},
	}
	if len(got) != len(want) {
		t.Fatalf("%d buckets, want %d: %+v", len(got), len(want), got)
	}
	for i, b := range got {
		w, ok := want[key(b.Start, b.Owner, b.Model)]
		if !ok || b.Responses != w.Responses || b.Usage != w.Usage {
			t.Errorf("bucket %+v, want %+v", b, w)
		}
		if i > 0 && b.Start.Before(got[i-1].Start) {
			t.Errorf("bucket %d starts before the one above it", i)
		}
	}
	if _, err := db.ConsoleUsage(ctx, consoleBase, 0); err == nil {
		t.Error("a zero bucket width was accepted")
	}
}

// testPing: a store that was just opened is healthy.
func testPing(t *testing.T, open Opener) {
	db := open(t)
	if err := db.Ping(context.Background()); err != nil {
		t.Fatalf("Ping of a new store: %v", err)
	}
}

// testConsoleFilesAndVectorStores: the console lists files and vector stores across
// owners, newest first, a page at a time; a file's head is at most the bytes asked
// for; a store comes with its files' status whoever owns it.
func testConsoleFilesAndVectorStores(t *testing.T, open Opener) {
	db := open(t)
	ctx := context.Background()
	big := make([]byte, 100_000)
	for i := range big {
		big[i] = 'a' + byte(i%26)
	}
	for i, f := range []storage.NewFile{
		{ID: "file-1", Owner: alice, Filename: "a.txt", Purpose: "assistants", Content: []byte("alpha\nbeta\n")},
		{ID: "file-2", Owner: bob, Filename: "big.txt", Purpose: "user_data", Content: big},
		{ID: "file-3", Owner: alice, Filename: "empty.txt", Purpose: "assistants"},
	} {
		f.CreatedAt = consoleBase.Add(time.Duration(i) * time.Minute)
		if err := db.CreateFile(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(files []storage.File) []string {
		var out []string
		for _, f := range files {
			out = append(out, f.ID)
		}
		return out
	}
	all, more, err := db.ConsoleFiles(ctx, "", 0)
	if err != nil || more || !slices.Equal(ids(all), []string{"file-3", "file-2", "file-1"}) {
		t.Fatalf("files: %v more=%v (%v)", ids(all), more, err)
	}
	if f := all[1]; f.Owner != bob || f.Filename != "big.txt" || f.Bytes != int64(len(big)) || f.Purpose != "user_data" {
		t.Errorf("file-2 listed as %+v", f)
	}
	page, more, err := db.ConsoleFiles(ctx, "", 2)
	if err != nil || !more || !slices.Equal(ids(page), []string{"file-3", "file-2"}) {
		t.Fatalf("first page: %v more=%v (%v)", ids(page), more, err)
	}
	page, more, err = db.ConsoleFiles(ctx, "file-2", 2)
	if err != nil || more || !slices.Equal(ids(page), []string{"file-1"}) {
		t.Fatalf("second page: %v more=%v (%v)", ids(page), more, err)
	}
	if _, _, err := db.ConsoleFiles(ctx, "file-x", 2); !errors.Is(err, storage.ErrInvalidCursor) {
		t.Errorf("unknown cursor: %v, want ErrInvalidCursor", err)
	}
	f, head, err := db.ConsoleFileHead(ctx, "file-2", 1000)
	if err != nil || f.Owner != bob || len(head) != 1000 || string(head) != string(big[:1000]) {
		t.Fatalf("head of file-2: %d bytes, %+v (%v)", len(head), f, err)
	}
	if _, head, err := db.ConsoleFileHead(ctx, "file-1", 1000); err != nil || string(head) != "alpha\nbeta\n" {
		t.Errorf("head of file-1: %q (%v)", head, err)
	}
	if _, head, err := db.ConsoleFileHead(ctx, "file-3", 1000); err != nil || len(head) != 0 {
		t.Errorf("head of the empty file: %q (%v)", head, err)
	}
	if _, _, err := db.ConsoleFileHead(ctx, "file-x", 10); !errors.Is(err, storage.ErrFileNotFound) {
		t.Errorf("head of an unknown file: %v, want ErrFileNotFound", err)
	}

	for i, s := range []storage.NewVectorStore{
		{ID: "vs-1", Owner: alice, Name: "docs", Files: []storage.NewVectorStoreFile{{FileID: "file-1"}, {FileID: "file-3"}}},
		{ID: "vs-2", Owner: bob, Name: "big", Files: []storage.NewVectorStoreFile{{FileID: "file-2"}}},
	} {
		s.CreatedAt = consoleBase.Add(time.Duration(i) * time.Minute)
		if err := db.CreateVectorStore(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.FailVectorStoreFile(ctx, "vs-1", "file-3", "failed", "invalid_file", "empty"); err != nil {
		t.Fatal(err)
	}
	stores, more, err := db.ConsoleVectorStores(ctx, "", 0)
	if err != nil || more || len(stores) != 2 || stores[0].ID != "vs-2" || stores[1].ID != "vs-1" {
		t.Fatalf("vector stores: %+v more=%v (%v)", stores, more, err)
	}
	if c := stores[1].Files; stores[1].Owner != alice || c.Total != 2 || c.Failed != 1 || c.InProgress != 1 {
		t.Errorf("vs-1 listed with owner %s, counts %+v", stores[1].Owner, c)
	}
	if page, more, err := db.ConsoleVectorStores(ctx, "vs-2", 1); err != nil || more || len(page) != 1 || page[0].ID != "vs-1" {
		t.Errorf("second page: %+v more=%v (%v)", page, more, err)
	}
	s, files, err := db.ConsoleVectorStore(ctx, "vs-1", 10)
	if err != nil || s.Name != "docs" || s.Owner != alice || len(files) != 2 {
		t.Fatalf("vs-1: %+v, %d files (%v)", s, len(files), err)
	}
	status := map[string]string{}
	for _, f := range files {
		status[f.FileID] = f.Status + " " + f.ErrorCode
	}
	if status["file-1"] != "in_progress " || status["file-3"] != "failed invalid_file" {
		t.Errorf("vs-1's files: %v", status)
	}
	if _, _, err := db.ConsoleVectorStore(ctx, "vs-x", 10); !errors.Is(err, storage.ErrVectorStoreNotFound) {
		t.Errorf("unknown store: %v, want ErrVectorStoreNotFound", err)
	}
}
