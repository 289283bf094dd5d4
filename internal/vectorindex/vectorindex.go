// Package vectorindex is exact nearest-neighbour search by cosine similarity over
// fixed-length float32 vectors: the search behind vector stores. Exact means the
// results are those of comparing every vector with the query in float32 (no
// approximate index, so no recall to tune and nothing to rebuild).
//
// To be fast without giving that up, a search runs in two passes (quantize.go). The
// first scans a copy of the vectors quantised to int8 (a quarter of the memory to
// read), which gives every vector's score within a known error bound. Only the
// vectors whose upper bound can still reach the k-th best lower bound are scored
// again, in float32, exactly as a full scan would score them; for embeddings that is
// a few dozen out of 100,000. The scan is split across the cores. See the benchmark
// and docs/files.md for the numbers.
package vectorindex

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
)

// MaxDim is the largest dimension an index takes: the int8 scan sums products of at
// most 127*127 in an int32, which holds 2^31/16129 of them.
const MaxDim = 1 << 17

// Index holds vectors of one dimension, normalised to length 1 when added, with the
// caller's id of each. It is safe for concurrent use: searches share a read lock,
// adds and removes take the write lock.
type Index struct {
	dim int
	mu  sync.RWMutex
	// Vector i is data[i*dim:(i+1)*dim] (unit length, float32: the exact scores)
	// and codes[i*dim:(i+1)*dim] with bounds[i] (the same vector in int8: the scan).
	data   []float32
	codes  []int8
	bounds []quantBound
	ids    []int64
	at     map[int64]int // id -> position
}

// New returns an empty index of vectors of dim dimensions, 1 to MaxDim.
func New(dim int) *Index {
	if dim <= 0 || dim > MaxDim {
		panic(fmt.Sprintf("vectorindex: dimension %d out of 1..%d", dim, MaxDim))
	}
	return &Index{dim: dim, at: map[int64]int{}}
}

// Dim is the dimension of the index's vectors.
func (x *Index) Dim() int { return x.dim }

// Len is how many vectors the index holds.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.ids)
}

// Bytes is the memory the index takes (what it has allocated), for metrics and
// budgets: 5 bytes a dimension and 28 a vector, plus the room append keeps.
func (x *Index) Bytes() int64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return int64(cap(x.data))*4 + int64(cap(x.codes)) + int64(cap(x.bounds))*8 + int64(cap(x.ids))*8 +
		int64(len(x.at))*16
}

// BytesFor is what an index of n vectors of dim dimensions takes, built by n Adds
// after Grow(n): what a caller can check against a budget before building one.
func BytesFor(n, dim int) int64 { return int64(n) * (int64(dim)*5 + 8 + 8 + 16) }

// Grow makes room for n more vectors, so that adding them allocates nothing more
// (and Bytes stays BytesFor).
func (x *Index) Grow(n int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.data = slices.Grow(x.data, n*x.dim)
	x.codes = slices.Grow(x.codes, n*x.dim)
	x.bounds = slices.Grow(x.bounds, n)
	x.ids = slices.Grow(x.ids, n)
}

// ErrDimension is the error of a vector whose length is not the index's dimension.
var ErrDimension = errors.New("vectorindex: vector of the wrong dimension")

// unit returns v scaled to length 1, or an error for a vector with no direction.
func unit(v []float32, dim int) ([]float32, error) {
	if len(v) != dim {
		return nil, fmt.Errorf("%w: %d values, want %d", ErrDimension, len(v), dim)
	}
	var norm float64
	for _, f := range v {
		norm += float64(f) * float64(f)
	}
	if norm == 0 || math.IsNaN(norm) || math.IsInf(norm, 0) {
		return nil, errors.New("vectorindex: a zero or non-finite vector has no direction")
	}
	inv := float32(1 / math.Sqrt(norm))
	u := make([]float32, len(v))
	for i, f := range v {
		u[i] = f * inv
	}
	return u, nil
}

// Add stores v under id, replacing a vector already stored under it. A zero vector
// has no direction and is refused.
func (x *Index) Add(id int64, v []float32) error {
	u, err := unit(v, x.dim)
	if err != nil {
		return err
	}
	code := make([]int8, x.dim)
	b := quantize(u, code)
	x.mu.Lock()
	defer x.mu.Unlock()
	pos, ok := x.at[id]
	if !ok {
		pos = len(x.ids)
		x.ids = append(x.ids, id)
		x.data = append(x.data, u...)
		x.codes = append(x.codes, code...)
		x.bounds = append(x.bounds, b)
		x.at[id] = pos
		return nil
	}
	copy(x.data[pos*x.dim:], u)
	copy(x.codes[pos*x.dim:], code)
	x.bounds[pos] = b
	return nil
}

// Remove deletes the vector stored under id, if any: the last vector takes its place.
func (x *Index) Remove(id int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	pos, ok := x.at[id]
	if !ok {
		return
	}
	last := len(x.ids) - 1
	if pos != last {
		copy(x.data[pos*x.dim:(pos+1)*x.dim], x.data[last*x.dim:])
		copy(x.codes[pos*x.dim:(pos+1)*x.dim], x.codes[last*x.dim:])
		x.bounds[pos] = x.bounds[last]
		x.ids[pos] = x.ids[last]
		x.at[x.ids[pos]] = pos
	}
	x.ids = x.ids[:last]
	x.data = x.data[:last*x.dim]
	x.codes = x.codes[:last*x.dim]
	x.bounds = x.bounds[:last]
	delete(x.at, id)
}

// Hit is one result: the id and its cosine similarity to the query, from -1 to 1.
type Hit struct {
	ID    int64
	Score float32
}

// Search returns the k vectors most similar to q, best first (equal scores: the
// smaller id first), among those keep accepts (nil: all) and scoring at least
// minScore. keep runs on the searching goroutines, several at once: it must be safe
// for that and fast (a map lookup). The result is the same as scoring every vector
// in float32 with the same dot product.
func (x *Index) Search(q []float32, k int, minScore float32, keep func(id int64) bool) ([]Hit, error) {
	u, err := unit(q, x.dim)
	if err != nil {
		if errors.Is(err, ErrDimension) {
			return nil, err
		}
		return nil, errors.New("vectorindex: a zero query has no direction")
	}
	if k <= 0 {
		return nil, nil
	}
	query := newQuery(u)

	x.mu.RLock()
	defer x.mu.RUnlock()
	n := len(x.ids)
	parts := min(runtime.GOMAXPROCS(0), max(1, n/4096))
	scans := make([]scan, parts)
	var wg sync.WaitGroup
	for p := range parts {
		lo, hi := p*n/parts, (p+1)*n/parts
		wg.Add(1)
		go func() {
			defer wg.Done()
			scans[p] = x.scan(query, lo, hi, k, minScore, keep)
		}()
	}
	wg.Wait()

	// The k-th best lower bound over all parts: a vector whose upper bound is below
	// it cannot be among the k best.
	floor := lowerBounds{k: k}
	for _, s := range scans {
		for _, b := range s.floor.b {
			floor.offer(b)
		}
	}
	cut := max(floor.kth(), minScore)
	top := topK{k: k}
	for _, s := range scans {
		for _, c := range s.cands {
			if c.upper < cut {
				continue
			}
			score := dot(u, x.data[c.pos*x.dim:(c.pos+1)*x.dim])
			if score >= minScore {
				top.offer(Hit{ID: x.ids[c.pos], Score: score})
			}
		}
	}
	return top.sorted(), nil
}

// candidate is a vector the int8 scan could not rule out, with its score's upper bound.
type candidate struct {
	pos   int
	upper float32
}

// scan is one part's first pass: the candidates, and the k best lower bounds seen.
type scan struct {
	cands []candidate
	floor lowerBounds
}

// scan runs the int8 pass over positions lo..hi.
func (x *Index) scan(q query, lo, hi, k int, minScore float32, keep func(int64) bool) scan {
	s := scan{floor: lowerBounds{k: k}}
	cut := minScore
	for i := lo; i < hi; i++ {
		approx, slack := q.estimate(x.codes[i*x.dim:(i+1)*x.dim], x.bounds[i])
		upper := approx + slack
		if upper < cut {
			continue
		}
		if keep != nil && !keep(x.ids[i]) {
			continue
		}
		s.cands = append(s.cands, candidate{pos: i, upper: upper})
		if s.floor.offer(approx - slack) {
			cut = max(s.floor.kth(), minScore)
			// Early in a scan the floor is low and many are kept; drop those it
			// has since ruled out before the list grows.
			if len(s.cands) >= 4*k+256 {
				s.cands = slices.DeleteFunc(s.cands, func(c candidate) bool { return c.upper < cut })
			}
		}
	}
	return s
}

// dot is the dot product of two vectors of the same length, four lanes at a time so
// the compiler keeps four independent sums in registers.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}

// lowerBounds keeps the k largest values offered, the smallest at b[0] (a min-heap).
type lowerBounds struct {
	k int
	b []float32
}

// offer keeps v if it is among the k largest so far, and says whether it was.
func (l *lowerBounds) offer(v float32) bool {
	if len(l.b) < l.k {
		l.b = append(l.b, v)
		for i := len(l.b) - 1; i > 0; {
			p := (i - 1) / 2
			if l.b[p] <= l.b[i] {
				break
			}
			l.b[p], l.b[i] = l.b[i], l.b[p]
			i = p
		}
		return true
	}
	if v <= l.b[0] {
		return false
	}
	l.b[0] = v
	for i := 0; ; {
		c := 2*i + 1
		if c >= len(l.b) {
			break
		}
		if c+1 < len(l.b) && l.b[c+1] < l.b[c] {
			c++
		}
		if l.b[i] <= l.b[c] {
			break
		}
		l.b[i], l.b[c] = l.b[c], l.b[i]
		i = c
	}
	return true
}

// kth is the k-th largest value offered, or -Inf while fewer than k were.
func (l *lowerBounds) kth() float32 {
	if len(l.b) < l.k {
		return float32(math.Inf(-1))
	}
	return l.b[0]
}

// topK keeps the k best hits offered.
type topK struct {
	k    int
	hits []Hit
}

func (t *topK) offer(h Hit) { t.hits = append(t.hits, h) }

// sorted returns the k best, best first; equal scores keep the smaller id first, so
// results do not depend on how the scan was split.
func (t *topK) sorted() []Hit {
	slices.SortFunc(t.hits, func(a, b Hit) int {
		switch {
		case worse(b, a):
			return -1
		case worse(a, b):
			return 1
		}
		return 0
	})
	return t.hits[:min(len(t.hits), t.k)]
}

// worse reports whether a ranks below b.
func worse(a, b Hit) bool {
	if a.Score != b.Score {
		return a.Score < b.Score
	}
	return a.ID > b.ID
}
