package sqlite

import (
	"context"
	"strings"
	"testing"
)

// TestLookupItemsUsesIndex: the lookup of an item by id is one index search, not a scan
// of every item.
func TestLookupItemsUsesIndex(t *testing.T) {
	db := openTestDB(t)
	ctx := context.Background()

	var plan strings.Builder
	rows, err := db.r.QueryContext(ctx, "EXPLAIN QUERY PLAN "+sqlLookupItem, "x", alice)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(detail + "\n")
	}
	if !strings.Contains(plan.String(), "items_item_id") || strings.Contains(plan.String(), "SCAN i") {
		t.Errorf("lookup does not use the item index:\n%s", plan.String())
	}
}
