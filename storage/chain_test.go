package storage

import (
	"database/sql/driver"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// fakeRows replays rows in the shape of sqlLoadChain.
type fakeRows struct{ rows [][]driver.Value }

func (f *fakeRows) Columns() []string {
	return []string{"depth", "is_output", "position", "a", "b", "c"}
}
func (f *fakeRows) Close() error { return nil }
func (f *fakeRows) Next(dest []driver.Value) error {
	if len(f.rows) == 0 {
		return io.EOF
	}
	copy(dest, f.rows[0])
	f.rows = f.rows[1:]
	return nil
}

// TestReadChainAnyRowOrder: LoadChain's SQL has no ORDER BY because the plan yields the
// right order; readChain must still assemble the same chain from rows in any order,
// should a future SQLite plan the query differently.
func TestReadChainAnyRowOrder(t *testing.T) {
	link := func(depth int64, id string, hasParent int64) []driver.Value {
		return []driver.Value{depth, nil, hasParent, id, "m", "completed"}
	}
	item := func(depth, output, pos int64, id string) []driver.Value {
		return []driver.Value{depth, output, pos, id, "message", `{"id":"` + id + `"}`}
	}
	rows := [][]driver.Value{
		link(0, "resp_3", 1), link(1, "resp_2", 1), link(2, "resp_1", 0),
		{int64(-1), nil, nil, nil, nil, `{"model":"m"}`},
		item(0, 0, 0, "in3"), item(0, 1, 0, "out3a"), item(0, 1, 1, "out3b"),
		// resp_2 has no items
		item(2, 0, 0, "in1a"), item(2, 0, 1, "in1b"), item(2, 1, 0, "out1"),
	}
	want := []string{"in1a", "in1b", "out1", "in3", "out3a", "out3b"}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 50 {
		shuffled := slices.Clone(rows)
		if i > 0 {
			rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		}
		c, err := readChain(&fakeRows{rows: shuffled})
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(c.Items); !slices.Equal(got, want) {
			t.Fatalf("order %d: context %v, want %v", i, got, want)
		}
		if len(c.Links) != 3 || c.Links[0].ID != "resp_1" || c.Links[2].ID != "resp_3" ||
			!slices.Equal(ids(c.Links[0].Input), []string{"in1a", "in1b"}) ||
			len(c.Links[1].Input)+len(c.Links[1].Output) != 0 ||
			!slices.Equal(ids(c.Links[2].Output), []string{"out3a", "out3b"}) ||
			string(c.Request) != `{"model":"m"}` {
			t.Fatalf("order %d: chain %+v", i, c)
		}
	}

	// The deepest link still having a parent means a broken chain.
	broken := slices.Clone(rows)
	broken[2] = link(2, "resp_1", 1)
	if _, err := readChain(&fakeRows{rows: broken}); err != ErrNotFound {
		t.Fatalf("broken chain: %v", err)
	}
	// A depth without its link row is the query's fault, not a broken chain.
	if _, err := readChain(&fakeRows{rows: slices.Delete(slices.Clone(rows), 1, 2)}); err == nil || err == ErrNotFound {
		t.Fatalf("missing link row: %v", err)
	}
}

// TestLoadChainPlan guards the plan the chain query's speed depends on: the walk reads
// only the covering index, items are found by key from each link, and nothing scans a
// table or sorts.
func TestLoadChainPlan(t *testing.T) {
	db := openTestDB(t)
	rows, err := db.r.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+sqlLoadChain, "resp_1", alice, maxChainDepth)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	joined := strings.Join(plan, "\n")
	for _, want := range []string{"COVERING INDEX responses_chain", "SEARCH items USING INDEX sqlite_autoindex_items_1 (response_id=?)"} {
		if !strings.Contains(joined, want) {
			t.Errorf("plan lacks %q:\n%s", want, joined)
		}
	}
	for _, bad := range []string{"SCAN items", "SCAN responses", "TEMP B-TREE", "AUTOMATIC"} {
		if strings.Contains(joined, bad) {
			t.Errorf("plan has %q:\n%s", bad, joined)
		}
	}
}
