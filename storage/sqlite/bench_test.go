package sqlite

import (
	"testing"

	"hearth/storage"
	"hearth/storage/storetest"
)

// The store benchmarks of storetest.Bench (what each measures is written there), on
// SQLite; storage/postgres runs the same ones. Run with:
//
//	go test ./storage/sqlite -run '^$' -bench . -benchmem
var bench = storetest.Bench{Open: func(b *testing.B) storage.Store { return openTestDB(b) }}

func BenchmarkLoadChain1000(b *testing.B)         { bench.LoadChain1000(b) }
func BenchmarkLoadChain1000Walk(b *testing.B)     { bench.LoadChain1000Walk(b) }
func BenchmarkLoadChainTail1000(b *testing.B)     { bench.LoadChainTail1000(b) }
func BenchmarkInsertResponse10Items(b *testing.B) { bench.InsertResponse10Items(b) }
func BenchmarkContinueChain1000(b *testing.B)     { bench.ContinueChain1000(b) }
func BenchmarkLookupItems3(b *testing.B)          { bench.LookupItems3(b) }
