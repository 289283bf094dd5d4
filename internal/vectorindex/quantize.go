package vectorindex

import "math"

// The first pass of a search scores int8 copies of the vectors. Each unit vector v is
// kept as codes c and a scale s with v ≈ s·c (s = max|v_j|/127, c_j = round(v_j/s)),
// and the length r of what that leaves out, r = |v - s·c|. The query q is quantised
// the same way (scale t, codes d, leftover ρ). Then
//
//	q·v = s·t·(c·d) + (v - s·c)·q + s·c·(q - t·d)
//
// and by Cauchy-Schwarz the two last terms are at most r·|q| and |s·c|·ρ ≤ (1+r)·ρ in
// size. So s·t·(c·d), an integer dot product, is the score within r + (1+r)·ρ, plus
// the rounding of the float32 dot product that gives the exact score. For embeddings
// of 768 dimensions that margin is about 0.01, against scores spread over 0.1 to 0.9.

// quantBound is what a vector's int8 codes need besides themselves.
type quantBound struct {
	scale float32 // the vector is about scale × its codes
	resid float32 // |vector - scale × codes|, rounded up
}

// quantize writes u's int8 codes into code and returns their scale and leftover.
func quantize(u []float32, code []int8) quantBound {
	var top float32
	for _, f := range u {
		top = max(top, float32(math.Abs(float64(f))))
	}
	scale := top / 127
	var resid float64
	for i, f := range u {
		c := math.Round(float64(f / scale))
		c = max(-127, min(127, c))
		code[i] = int8(c)
		d := float64(f) - float64(scale)*c
		resid += d * d
	}
	return quantBound{scale: scale, resid: roundUp(math.Sqrt(resid))}
}

// roundUp is the smallest float32 not below f.
func roundUp(f float64) float32 {
	r := float32(f)
	if float64(r) < f {
		r = math.Nextafter32(r, float32(math.Inf(1)))
	}
	return r
}

// query is a unit query vector quantised for the first pass.
type query struct {
	code  []int8
	b     quantBound
	float float32 // the float32 rounding the margin allows for
}

func newQuery(u []float32) query {
	q := query{code: make([]int8, len(u))}
	q.b = quantize(u, q.code)
	// A float32 dot product of n terms whose absolute products sum to at most 1 is
	// within n·2^-24 of the real one (twice: the exact score's and the estimate's
	// own rounding), and unit vectors are of length 1 within as much again.
	q.float = float32(4*(len(u)+4)) * 0x1p-24
	return q
}

// estimate returns the vector's score within slack: |q·v - approx| <= slack.
func (q query) estimate(code []int8, b quantBound) (approx, slack float32) {
	approx = b.scale * q.b.scale * float32(dotInt8(q.code, code))
	slack = b.resid + (1+b.resid)*q.b.resid + q.float
	return approx, slack
}

// dotInt8Go is the dot product of two int8 vectors of the same length, in int32
// (exact: the dimension is at most MaxDim), in Go, eight lanes at a time: dotInt8 on a
// CPU without a faster one (dot_amd64.go), and its remainder.
func dotInt8Go(a, b []int8) int32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 int32
	i := 0
	for ; i+8 <= len(a); i += 8 {
		aa, bb := a[i:i+8:i+8], b[i:i+8:i+8]
		s0 += int32(aa[0])*int32(bb[0]) + int32(aa[4])*int32(bb[4])
		s1 += int32(aa[1])*int32(bb[1]) + int32(aa[5])*int32(bb[5])
		s2 += int32(aa[2])*int32(bb[2]) + int32(aa[6])*int32(bb[6])
		s3 += int32(aa[3])*int32(bb[3]) + int32(aa[7])*int32(bb[7])
	}
	for ; i < len(a); i++ {
		s0 += int32(a[i]) * int32(b[i])
	}
	return s0 + s1 + s2 + s3
}
