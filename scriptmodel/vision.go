package scriptmodel

import (
	"fmt"
	"math"

	"github.com/ollama/ollama/fs/ggml"
)

// A vision script model is written as architecture mistral3 (Pixtral's vision tower in
// front of a llama-shaped text model): of the architectures Ollama's engine (0.17.4 to 0.24.0) runs
// with images, its image placeholders are the small fixed ids 10, 12 and 13 (byte tokens
// here), its image size and patch size come from the GGUF, and small images are not
// scaled up, so a tiny tower suffices.
//
// The tower measures colour. Its patch convolution averages each channel of a patch,
// its norm turns that into a direction of fixed length, its layers are zero (identity
// through the residual), and the projector copies the three channels into three
// dimensions of the text model beside a constant "image" marker. The text model's one
// layer then has one live attention head: every text token's query matches only the
// marker, so a text token attends to the context's image tokens alone (or, with no
// image, uniformly to text tokens, whose values are zero) and adds their average
// colour and marker to its residual. The output head reads those dimensions only for
// the tokens that name a colour; every other logit is the plain script's, so the
// image steers exactly one step and the rest is as deterministic as any script model.

// Vision geometry: patches of visionPatch pixels, images scaled down (never up) to
// fit visionEdge pixels. The runtime gives each patch one token and each row of
// patches one more (a break, or the end of the image).
const (
	visionPatch = 8
	visionEdge  = 32
	visionWidth = 64
)

// Colour is what a vision script model sees in the images of its context.
type Colour int

// The colours a vision script model names: the dominant channel of the images'
// average colour (after the runtime's CLIP normalisation), or NoImage.
const (
	NoImage Colour = iota
	Red
	Green
	Blue
)

// Vision makes a spec a vision model whose answer names the colour of its images.
type Vision struct {
	// After is the entry whose script ends where the colour is named.
	After string
	// Options are the entries of the scripts that follow After's, by Colour: the
	// colour's token is the first of what follows.
	Options [4]string
}

// ImageTokens is the number of input tokens the runtime makes of an image of w×h pixels
// for a vision script model (mistral3's image processor): scaled to fit visionEdge, cut
// into patches of visionPatch, one token per patch plus one per row.
func ImageTokens(w, h int) int {
	if ratio := max(float64(w)/visionEdge, float64(h)/visionEdge); ratio > 1 {
		w, h = int(math.Floor(float64(w)/ratio)), int(math.Floor(float64(h)/ratio))
	}
	px, py := (w-1)/visionPatch+1, (h-1)/visionPatch+1
	return px*py + py
}

// Answer is the text a vision model writes after its Vision.After entry when its images
// look c, and the number of tokens the runtime reports for it.
func (m *Model) Answer(c Colour) (string, int) {
	v := m.Vision
	opt := v.Options[c]
	text := m.Text(v.After) + opt + m.Text(opt)
	return text, len(m.chain[v.After]) + 1 + len(m.chain[opt]) + 1
}

// Text dimensions the image carries beyond the one-hot token dimensions.
func (m *Model) markerDim() int      { return len(m.vocab.tokens) }
func (m *Model) colourDim(j int) int { return len(m.vocab.tokens) + 1 + j }

// branch turns After's last token into the branch point: no fixed successor, the
// options tied on it (NoImage a hair ahead), the image's dimensions deciding.
func (m *Model) branch() error {
	v := m.Vision
	ids := m.chain[v.After]
	if ids == nil {
		return fmt.Errorf("scriptmodel: vision: no script after %q", v.After)
	}
	m.branchFrom = ids[len(ids)-1]
	for c, opt := range v.Options {
		_, isEntry := m.chain[opt]
		id, ok := m.vocab.ids[opt]
		if !ok || !isEntry {
			return fmt.Errorf("scriptmodel: vision: option %d (%q) is no script entry", c, opt)
		}
		m.options[c] = id
	}
	m.next[m.branchFrom] = -1
	return nil
}

// Constants of the image path, chosen so every margin is wide (see visionHead):
const (
	// imageMarker is the marker's value in an image token's text embedding; the
	// colour direction beside it has length visionColourLen (RMS-normalised over
	// visionWidth dimensions).
	imageMarker     = 8
	visionColourLen = 8 // sqrt(visionWidth)
	// projectorShift keeps the projector's GELU in its linear range (inputs 8..24).
	projectorShift = 16
	// attnScore is a text query's score on an image key: e^-40 leaves text keys no
	// weight at any context length.
	attnScore = 40
	// carried is how much marker and colour attention adds to a text token's
	// residual (its own embedding is 1).
	carried = 0.5
	// optionWeight is the output head's weight from the marker and from a colour to
	// the token naming it.
	optionWeight = 20
)

// visionKV is the GGUF metadata of the vision tower and of mistral3's text model.
func visionKV(kv map[string]any) {
	kv["general.architecture"] = "mistral3"
	// Rotary embedding on half of each head: the other half carries the
	// position-independent query and key that find the image tokens.
	kv["rope.dimension_count"] = uint32(headDim / 2)
	kv["spatial_merge_size"] = uint32(1)
	kv["vision.block_count"] = uint32(1)
	kv["vision.embedding_length"] = uint32(visionWidth)
	kv["vision.feed_forward_length"] = uint32(visionWidth)
	kv["vision.attention.head_count"] = uint32(1)
	kv["vision.attention.key_length"] = uint32(visionWidth)
	kv["vision.attention.layer_norm_epsilon"] = float32(1e-5)
	kv["vision.image_size"] = uint32(visionEdge)
	kv["vision.longest_edge"] = uint32(visionEdge)
	kv["vision.patch_size"] = uint32(visionPatch)
	kv["vision.num_channels"] = uint32(3)
	kv["vision.rope.freq_base"] = float32(10000)
}

// visionTensors are the tower's and projector's tensors.
func (m *Model) visionTensors() []*ggml.Tensor {
	w, d := visionWidth, m.width
	ones := make([]float32, w)
	for i := range ones {
		ones[i] = 1
	}
	identity := make([]float32, w*w)
	for i := 0; i < w; i++ {
		identity[i*w+i] = 1
	}
	// Patch convolution [kw, kh, in, out]: output channel c is the mean of input c.
	conv := make([]float32, visionPatch*visionPatch*3*w)
	for c := 0; c < 3; c++ {
		for p := 0; p < visionPatch*visionPatch; p++ {
			conv[(c*3+c)*visionPatch*visionPatch+p] = 1.0 / (visionPatch * visionPatch)
		}
	}
	bias1 := make([]float32, w)
	lin2 := make([]float32, w*d) // [in w, out d]
	bias2 := make([]float32, d)
	for c := 0; c < 3; c++ {
		bias1[c] = projectorShift
		lin2[m.colourDim(c)*w+c] = 1
		bias2[m.colourDim(c)] = -projectorShift
	}
	bias2[m.markerDim()] = imageMarker
	zero := func(name string, shape ...uint64) *ggml.Tensor {
		return f32(name, make([]float32, shape[0]*shape[1]), shape...)
	}
	W := uint64(w)
	return []*ggml.Tensor{
		f32("v.patch_conv.weight", conv, visionPatch, visionPatch, 3, W),
		f32("v.encoder_norm.weight", ones, W),
		f32("v.blk.0.attn_norm.weight", ones, W),
		f32("v.blk.0.ffn_norm.weight", ones, W),
		zero("v.blk.0.attn_q.weight", W, W),
		zero("v.blk.0.attn_k.weight", W, W),
		zero("v.blk.0.attn_v.weight", W, W),
		zero("v.blk.0.attn_output.weight", W, W),
		zero("v.blk.0.ffn_gate.weight", W, W),
		zero("v.blk.0.ffn_up.weight", W, W),
		zero("v.blk.0.ffn_down.weight", W, W),
		f32("mm.norm.weight", ones, W),
		f32("mm.patch_merger.merging_layer.weight", identity, W, W),
		f32("mm.linear_1.weight", identity, W, W),
		f32("mm.linear_1.bias", bias1, W),
		f32("mm.linear_2.weight", lin2, W, uint64(d)),
		f32("mm.linear_2.bias", bias2, uint64(d)),
	}
}

// visionAttention is the text layer's attention ([in, out] layouts): one head whose
// non-rotated half matches text queries to image keys, and whose value and output
// carry an image token's marker and colour into the same dimensions, scaled to
// `carried`.
func (m *Model) visionAttention() (q, k, v, o []float32) {
	d, V := m.width, len(m.vocab.tokens)
	const slot = headDim / 2 // first dimension rotary embedding leaves alone
	// An image token's embedding after the layer's RMS norm: scaled by r.
	r := math.Sqrt(float64(d)) / math.Hypot(imageMarker, visionColourLen)
	q = make([]float32, d*headDim)
	for t := 0; t < V; t++ {
		q[slot*d+t] = 1 // every text token, normalised to sqrt(d) on its axis
	}
	k = make([]float32, d*headDim)
	// score = q·k / sqrt(headDim) = sqrt(d) · K · r·imageMarker / 8
	k[slot*d+m.markerDim()] = float32(attnScore * math.Sqrt(headDim) / (math.Sqrt(float64(d)) * r * imageMarker))
	v = make([]float32, d*headDim)
	o = make([]float32, headDim*d)
	v[0*d+m.markerDim()] = 1
	o[m.markerDim()*headDim+0] = float32(carried / (r * imageMarker))
	for c := 0; c < 3; c++ {
		v[(1+c)*d+m.colourDim(c)] = 1
		o[m.colourDim(c)*headDim+1+c] = float32(carried / (r * visionColourLen))
	}
	return q, k, v, o
}

// visionHead adds the branch to the output head out ([d][V] as rows per next token).
// After the final norm a text token's own axis is about sqrt(d)/1.2 and the marker
// and colour axes about half that: the options' tie (successorWeight) plus the marker
// (optionWeight) beat NoImage's lead of one whenever an image is in context, the
// colour axes (optionWeight, ±1 in direction) then pick the dominant one by a margin
// of hundreds, and nowhere else do these weights (under 400) reach a successor's
// (over 1000).
func (m *Model) visionHead(out []float32) {
	d := m.width
	for c, id := range m.options {
		w := float32(successorWeight)
		if Colour(c) == NoImage {
			w++
		} else {
			out[id*d+m.markerDim()] = optionWeight
			out[id*d+m.colourDim(c-1)] = optionWeight
		}
		out[id*d+m.branchFrom] = w
	}
}
