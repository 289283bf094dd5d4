package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"hearth/storage"
)

// BenchmarkConsoleResponses reads the console's first page and a deep page of a
// database of 50,000 responses (4 owners, 3 models, bodies of ~2 KB), with and without
// the created_at index of migration 0009:
//
//	go test ./storage -run '^$' -bench ConsoleResponses -benchtime 200x
func BenchmarkConsoleResponses(b *testing.B) {
	db := openTestDB(b)
	ctx := context.Background()
	const n = 50_000
	body := `{"output":"` + strings.Repeat("x", 2000) + `"}`
	base := time.UnixMilli(1_700_000_000_000)
	err := db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		st, err := tx.PrepareContext(ctx, `INSERT INTO responses (id, owner, model, status, request, response, created_at, input_tokens)
			VALUES (?, ?, ?, ?, '{}', ?, ?, 10)`)
		if err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			status := "completed"
			if i%50 == 0 {
				status = "failed"
			}
			if _, err := st.ExecContext(ctx, fmt.Sprintf("resp_%06d", i), fmt.Sprintf("owner%d", i%4),
				fmt.Sprintf("model%d", i%3), status, body, base.Add(time.Duration(i)*time.Second).UnixMilli()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	deep := base.Add(5_000 * time.Second)
	cases := []struct {
		name string
		f    storage.ConsoleFilter
	}{
		{"first page", storage.ConsoleFilter{Limit: 50}},
		{"first page, one owner", storage.ConsoleFilter{Owner: "owner1", Limit: 50}},
		{"first page, failed", storage.ConsoleFilter{Status: storage.StatusFailed, Limit: 50}},
		{"deep page", storage.ConsoleFilter{AfterCreated: deep, AfterID: "resp_005000", Limit: 50}},
		{"since an hour", storage.ConsoleFilter{Since: base.Add((n - 3600) * time.Second), Limit: 50}},
	}
	run := func(label string) {
		for _, c := range cases {
			b.Run(label+"/"+c.name, func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					rows, _, err := db.ConsoleResponses(ctx, c.f)
					if err != nil || len(rows) == 0 {
						b.Fatal(err, len(rows))
					}
				}
			})
		}
	}
	run("index")
	if _, err := db.w.ExecContext(ctx, `DROP INDEX responses_created`); err != nil {
		b.Fatal(err)
	}
	run("no index")
}
