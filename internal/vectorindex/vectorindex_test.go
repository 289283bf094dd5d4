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

// exactScan is the search without the int8 pass: every vector scored in float32
// with the same dot product, sorted by score then id. Search must return exactly this.
func exactScan(x *Index, q []float32, k int, minScore float32, keep func(int64) bool) []Hit {
	u, _ := unit(q, x.dim)
	var hits []Hit
	for i, id := range x.ids {
		if keep != nil && !keep(id) {
			continue
		}
		if s := dot(u, x.data[i*x.dim:(i+1)*x.dim]); s >= minScore {
			hits = append(hits, Hit{ID: id, Score: s})
		}
	}
	sort.Slice(hits, func(i, j int) bool { return worse(hits[j], hits[i]) })
	return hits[:min(len(hits), k)]
}

// clustered returns n vectors around c centres, each a centre plus noise of the
// given size: like embeddings of related texts, many score close to the best, which
// is where the int8 pass has the most to rule out.
func clustered(r *rand.Rand, n, c, dim int, noise float64) [][]float32 {
	centres := make([][]float32, c)
	for i := range centres {
		centres[i] = randomVector(r, dim)
	}
	out := make([][]float32, n)
	for i := range out {
		v := make([]float32, dim)
		for j, f := range centres[r.IntN(c)] {
			v[j] = f + float32(noise*r.NormFloat64())
		}
		out[i] = v
	}
	return out
}

// TestSearchEqualsExactScan checks that the two-pass search returns exactly what a
// float32 scan of every vector returns (same ids, same scores, same order) on random,
// clustered and duplicated vectors, with dimensions that are and are not multiples of
// the int8 kernel's 32, thresholds and filters.
func TestSearchEqualsExactScan(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	cases := []struct {
		name string
		dim  int
		vs   [][]float32
	}{
		{"random-768", 768, nil},
		{"random-33", 33, nil},
		{"clustered-768", 768, clustered(r, 4000, 20, 768, 0.3)},
		{"tight-clusters-100", 100, clustered(r, 4000, 5, 100, 0.05)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vs := c.vs
			if vs == nil {
				for range 4000 {
					vs = append(vs, randomVector(r, c.dim))
				}
			}
			x := New(c.dim)
			for i, v := range vs {
				if err := x.Add(int64(i), v); err != nil {
					t.Fatal(err)
				}
			}
			// Exact duplicates under other ids: equal scores, ordered by id.
			for i := range 50 {
				x.Add(int64(len(vs)+i), vs[i%5])
			}
			for trial := range 30 {
				var q []float32
				switch trial % 3 {
				case 0:
					q = randomVector(r, c.dim)
				default: // near a stored vector: high scores, many close
					q = slices.Clone(vs[r.IntN(len(vs))])
					for j := range q {
						q[j] += float32(0.01 * r.NormFloat64())
					}
				}
				k := []int{1, 10, 50}[trial%3]
				minScore := float32(-1)
				if trial%4 == 3 {
					minScore = 0.5
				}
				var keep func(int64) bool
				if trial%5 == 4 {
					keep = func(id int64) bool { return id%3 != 0 }
				}
				got, err := x.Search(q, k, minScore, keep)
				if err != nil {
					t.Fatal(err)
				}
				want := exactScan(x, q, k, minScore, keep)
				if !slices.Equal(got, want) {
					t.Fatalf("trial %d (k %d, min %v): got %v, want %v", trial, k, minScore, got, want)
				}
			}
		})
	}
}

// TestEstimateBound checks the int8 pass's promise on which exactness rests: the
// float32 score is within slack of the estimate, for every vector.
func TestEstimateBound(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, dim := range []int{3, 64, 768, 1024} {
		vs := append(clustered(r, 200, 3, dim, 0.1), clustered(r, 200, 200, dim, 1)...)
		for range 20 {
			q, _ := unit(randomVector(r, dim), dim)
			if r.IntN(2) == 0 {
				q, _ = unit(vs[r.IntN(len(vs))], dim)
			}
			query := newQuery(q)
			code := make([]int8, dim)
			for _, v := range vs {
				u, _ := unit(v, dim)
				b := quantize(u, code)
				approx, slack := query.estimate(code, b)
				exact := dot(q, u)
				if d := math.Abs(float64(exact - approx)); d > float64(slack) {
					t.Fatalf("dim %d: |%v - %v| = %v over slack %v", dim, exact, approx, d, slack)
				}
			}
		}
	}
}

// TestDotInt8 checks the int8 dot product (AVX2 where the CPU has it) against the Go
// loop, at the extremes and at every length around the kernel's 32-element rounds.
func TestDotInt8(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for n := range 200 {
		a, b := make([]int8, n), make([]int8, n)
		for i := range a {
			a[i], b[i] = int8(r.IntN(255)-127), int8(r.IntN(255)-127)
		}
		if got, want := dotInt8(a, b), dotInt8Go(a, b); got != want {
			t.Fatalf("len %d: %d, want %d", n, got, want)
		}
		for i := range a {
			a[i], b[i] = -127, int8(127-(i%2)*254)
		}
		if got, want := dotInt8(a, b), dotInt8Go(a, b); got != want {
			t.Fatalf("len %d extremes: %d, want %d", n, got, want)
		}
	}
}

// BenchmarkSearch measures an exact top-10 search over n vectors of 768 dimensions
// (nomic-embed-text's size), random and clustered (many scores near the best):
//
//	go test ./internal/vectorindex -run '^$' -bench Search -cpu 1,2
func BenchmarkSearch(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		for _, kind := range []string{"random", "clustered"} {
			b.Run(fmt.Sprintf("%dk-768-%s", n/1000, kind), func(b *testing.B) {
				r := rand.New(rand.NewPCG(3, 4))
				x := New(768)
				x.Grow(n)
				var q []float32
				if kind == "random" {
					for id := range int64(n) {
						x.Add(id, randomVector(r, 768))
					}
					q = randomVector(r, 768)
				} else {
					vs := clustered(r, n, 100, 768, 0.5)
					for id, v := range vs {
						x.Add(int64(id), v)
					}
					q = slices.Clone(vs[0])
					for j := range q {
						q[j] += float32(0.3 * r.NormFloat64())
					}
				}
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
}
