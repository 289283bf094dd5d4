package vectorindex

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

func randomVector(r *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// bruteForce is the search done the slow, obvious way, in float64.
func bruteForce(vs map[int64][]float32, q []float32, k int, min float32) []Hit {
	cos := func(a, b []float32) float64 {
		var d, na, nb float64
		for i := range a {
			d += float64(a[i]) * float64(b[i])
			na += float64(a[i]) * float64(a[i])
			nb += float64(b[i]) * float64(b[i])
		}
		return d / math.Sqrt(na*nb)
	}
	var hits []Hit
	for id, v := range vs {
		if s := float32(cos(q, v)); s >= min {
			hits = append(hits, Hit{ID: id, Score: s})
		}
	}
	sort.Slice(hits, func(i, j int) bool { return worse(hits[j], hits[i]) })
	if len(hits) > k {
		hits = hits[:k]
	}
	return hits
}

func TestSearchMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const dim = 64
	x := New(dim)
	vs := map[int64][]float32{}
	for id := range int64(5000) {
		v := randomVector(r, dim)
		vs[id] = v
		if err := x.Add(id, v); err != nil {
			t.Fatal(err)
		}
	}
	// Replace one and remove a few: the index follows.
	vs[7] = randomVector(r, dim)
	x.Add(7, vs[7])
	for _, id := range []int64{3, 4999, 100} {
		x.Remove(id)
		delete(vs, id)
	}
	if x.Len() != len(vs) {
		t.Fatalf("len %d, want %d", x.Len(), len(vs))
	}
	for trial := range 20 {
		q := randomVector(r, dim)
		min := float32(-1)
		if trial%2 == 1 {
			min = 0.2
		}
		got, err := x.Search(q, 10, min, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := bruteForce(vs, q, 10, min)
		if len(got) != len(want) {
			t.Fatalf("trial %d: %d hits, want %d", trial, len(got), len(want))
		}
		for i := range got {
			if got[i].ID != want[i].ID || math.Abs(float64(got[i].Score-want[i].Score)) > 1e-4 {
				t.Errorf("trial %d hit %d: %+v, want %+v", trial, i, got[i], want[i])
			}
		}
	}
	// A filter keeps only what it accepts.
	q := randomVector(r, dim)
	got, _ := x.Search(q, 5, -1, func(id int64) bool { return id%2 == 0 })
	for _, h := range got {
		if h.ID%2 != 0 {
			t.Errorf("filtered out id %d returned", h.ID)
		}
	}
	// The vector itself is its own best match, with score 1.
	got, _ = x.Search(vs[42], 1, -1, nil)
	if len(got) != 1 || got[0].ID != 42 || math.Abs(float64(got[0].Score-1)) > 1e-5 {
		t.Errorf("self match %+v", got)
	}
}

func TestRefusals(t *testing.T) {
	x := New(3)
	if err := x.Add(1, []float32{1, 2}); err == nil {
		t.Error("wrong dimension accepted")
	}
	if err := x.Add(1, []float32{0, 0, 0}); err == nil {
		t.Error("zero vector accepted")
	}
	if _, err := x.Search([]float32{0, 0, 0}, 3, -1, nil); err == nil {
		t.Error("zero query accepted")
	}
	if hits, err := x.Search([]float32{1, 0, 0}, 3, -1, nil); err != nil || len(hits) != 0 {
		t.Errorf("empty index: %v %v", hits, err)
	}
	x.Add(1, []float32{1, 0, 0})
	x.Add(2, []float32{1, 0, 0})
	if hits, _ := x.Search([]float32{1, 0, 0}, 5, -1, nil); !slices.Equal([]int64{hits[0].ID, hits[1].ID}, []int64{1, 2}) {
		t.Errorf("ties: %+v, want the smaller id first", hits)
	}
}

// BenchmarkSearch measures an exact top-10 search over n vectors of 768 dimensions
// (nomic-embed-text's size): go test ./internal/vectorindex -run '^$' -bench Search
func BenchmarkSearch(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("%dk-768", n/1000), func(b *testing.B) {
			r := rand.New(rand.NewPCG(3, 4))
			x := New(768)
			for id := range int64(n) {
				x.Add(id, randomVector(r, 768))
			}
			q := randomVector(r, 768)
			b.ResetTimer()
			for range b.N {
				if _, err := x.Search(q, 10, -1, nil); err != nil {
					b.Fatal(err)
				}
			}
			// After the loop: ResetTimer clears reported metrics.
			b.ReportMetric(float64(x.Bytes())/(1<<20), "MiB")
		})
	}
}
