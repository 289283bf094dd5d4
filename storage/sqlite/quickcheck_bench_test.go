package sqlite

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"hearth/storage"
)

// quickCheckMB is the size of the database BenchmarkQuickCheck builds. hearth serve runs
// quick_check at every start, so its time on a large database is start-up time; the
// number in docs/security.md comes from
//
//	go test ./storage -run '^$' -bench QuickCheck -benchtime 3x -quickcheck-mb 1024
var quickCheckMB = flag.Int("quickcheck-mb", 64, "size in MB of the database BenchmarkQuickCheck builds")

// BenchmarkQuickCheck times QuickCheck on a database of -quickcheck-mb MB of responses
// (five items of ~300 bytes each, of distinct text, so pages are not alike), with the
// file in the page cache, as after a restart of hearth.
func BenchmarkQuickCheck(b *testing.B) {
	path := filepath.Join(b.TempDir(), "hearth.db")
	db, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	// Building the file is not what is measured: skip the fsync of every commit.
	if _, err := db.w.ExecContext(ctx, `PRAGMA synchronous = OFF`); err != nil {
		b.Fatal(err)
	}
	start, n := time.Now(), 0
	for size := int64(0); size < int64(*quickCheckMB)<<20; n++ {
		id := fmt.Sprintf("resp_%07d", n)
		in := []storage.Item{userMessage(id+"_u", text(290, id))}
		out := []storage.Item{reasoning(id+"_r", text(290, id)), functionCall(id+"_f", "lookup", `{"q":"`+id+`"}`),
			userMessage(id+"_o", text(290, id)), assistantMessage(id+"_a", text(290, id))}
		turn(b, db, alice, id, "", in, out)
		if n%1000 == 0 {
			if st, err := os.Stat(path + "-wal"); err == nil {
				size = st.Size()
			}
			if st, err := os.Stat(path); err == nil {
				size += st.Size()
			}
		}
	}
	if _, err := db.w.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		b.Fatal(err)
	}
	st, _ := os.Stat(path)
	b.Logf("built %d responses, %d MB, in %v", n, st.Size()>>20, time.Since(start).Round(time.Second))
	b.ResetTimer()
	for b.Loop() {
		if err := db.QuickCheck(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(st.Size())/(1<<20), "MB")
	b.ReportMetric(float64(n), "responses")
}
