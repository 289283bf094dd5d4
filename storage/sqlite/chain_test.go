package sqlite

import (
	"database/sql/driver"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"hearth/storage"
	"hearth/storage/record"
	"hearth/storage/sqlstore"
)

// fakeRows replays rows in the shape of sqlLoadChain.
type fakeRows struct{ rows [][]driver.Value }

func (f *fakeRows) Columns() []string {
	return []string{"depth", "has_parent", "id", "model", "status", "input_pack", "output_pack", "checkpoint", "stamp"}
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

func packOf(ids ...string) []byte {
	items := make([]storage.Item, len(ids))
	for i, id := range ids {
		items[i] = storage.Item{ID: id, Type: "message", JSON: []byte(`{"id":"` + id + `"}`)}
	}
	return record.PackItems(items)
}

// TestReadChainAnyRowOrder: readChain must assemble the same chain from its rows in
// any order, should a future SQLite plan the query differently.
func TestReadChainAnyRowOrder(t *testing.T) {
	link := func(depth int64, id string, hasParent int64, in, out []byte) []driver.Value {
		var o driver.Value
		if out != nil {
			o = out
		}
		return []driver.Value{depth, hasParent, id, "m", "completed", in, o, nil, nil}
	}
	rows := [][]driver.Value{
		link(0, "resp_3", 1, packOf("in3"), packOf("out3a", "out3b")),
		link(1, "resp_2", 1, packOf(), nil), // no items; in flight, so no output pack
		link(2, "resp_1", 0, packOf("in1a", "in1b"), packOf("out1")),
		{int64(-1), nil, nil, nil, nil, `{"model":"m"}`, nil, nil, nil},
	}
	want := []string{"in1a", "in1b", "out1", "in3", "out3a", "out3b"}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 20 {
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
			!slices.Equal(ids(c.Links[0].Output), []string{"out1"}) ||
			len(c.Links[1].Input)+len(c.Links[1].Output) != 0 ||
			!slices.Equal(ids(c.Links[2].Output), []string{"out3a", "out3b"}) ||
			string(c.Request) != `{"model":"m"}` {
			t.Fatalf("order %d: chain %+v", i, c)
		}
	}

	// The deepest link still having a parent means a broken chain.
	broken := slices.Clone(rows)
	broken[2] = link(2, "resp_1", 1, packOf(), nil)
	if _, err := readChain(&fakeRows{rows: broken}); err != storage.ErrNotFound {
		t.Fatalf("broken chain: %v", err)
	}
	// A depth without its link row is the query's fault, not a broken chain.
	if _, err := readChain(&fakeRows{rows: slices.Delete(slices.Clone(rows), 1, 2)}); err == nil || err == storage.ErrNotFound {
		t.Fatalf("missing link row: %v", err)
	}
	// A damaged pack is an error, never a shorter context.
	damaged := slices.Clone(rows)
	p := packOf("in1a", "in1b")
	damaged[2] = link(2, "resp_1", 0, p[:len(p)-3], packOf("out1"))
	if _, err := readChain(&fakeRows{rows: damaged}); err == nil || err == storage.ErrNotFound {
		t.Fatalf("damaged pack: %v", err)
	}
}

// TestLoadChainPlan guards the plan the chain query's speed depends on: each step of
// the walk is one index search, items come from the packs (not the items table), and
// nothing scans a table or sorts.
func TestLoadChainPlan(t *testing.T) {
	db := openTestDB(t)
	rows, err := db.r.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+sqlLoadChain, "resp_1", alice, sqlstore.MaxChainDepth, false)
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
	for _, want := range []string{"SEARCH r USING INDEX"} {
		if !strings.Contains(joined, want) {
			t.Errorf("plan lacks %q:\n%s", want, joined)
		}
	}
	for _, bad := range []string{"items", "SCAN responses", "TEMP B-TREE", "AUTOMATIC"} {
		if strings.Contains(joined, bad) {
			t.Errorf("plan has %q:\n%s", bad, joined)
		}
	}
}
