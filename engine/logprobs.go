package engine

import (
	"fmt"

	"hearth"
	"hearth/toolgrammar"
)

// wantsLogprobs reports whether the response's output text carries the log
// probabilities of its tokens: asked with include, or implied by top_logprobs (the
// alternatives are listed with the tokens).
func wantsLogprobs(req *hearth.CreateResponseRequest) bool {
	return req.Includes(hearth.IncludeOutputTextLogprobs) || req.TopLogprobs != nil && *req.TopLogprobs > 0
}

// checkLogprobs refuses log probabilities the model's runtime cannot give: a response
// without them would pretend. The 400 names the field that asked.
func checkLogprobs(req *hearth.CreateResponseRequest, m *Model) error {
	if !wantsLogprobs(req) || m.Info.NoLogprobs == "" {
		return nil
	}
	param, what := "include", "include "+hearth.IncludeOutputTextLogprobs
	if !req.Includes(hearth.IncludeOutputTextLogprobs) {
		param, what = "top_logprobs", "top_logprobs"
	}
	return hearth.InvalidRequest(param, "unsupported_parameter",
		fmt.Sprintf("%s cannot be served for model %q: %s.", what, m.Name, m.Info.NoLogprobs))
}

// tokenLog lays the generated tokens' log probabilities along the raw output, so that
// the parser's events (which say how much of the output they cover, Event.Offset) can
// take the tokens of the text they carry. A token belongs to the first event whose
// offset reaches its end: a text delta keeps it (its logprobs go out with the delta),
// any other event drops it (reasoning, markup, a tool call: OpenAI's logprobs are
// those of output_text only). Text the parser holds back (trailing blanks, a possible
// delimiter) takes its tokens with it to the delta that finally carries it.
type tokenLog struct {
	pending []placedToken
}

type placedToken struct {
	end int64 // output offset just past the token
	lp  hearth.LogProb
}

// add places a chunk's tokens, the chunk starting at output offset at. Each token ends
// where its text does, and no later than the chunk's end: the runtime may have cut a
// stop string out of the last token's text.
func (l *tokenLog) add(at int64, text string, lps []hearth.LogProb) {
	if l == nil {
		return
	}
	end := at + int64(len(text))
	pos := at
	for _, lp := range lps {
		pos = min(pos+int64(len(lp.Bytes)), end)
		l.pending = append(l.pending, placedToken{pos, lp})
	}
}

// take returns the tokens that end within the first upTo bytes of output, removing
// them. The result may alias the log: use it before the next add.
func (l *tokenLog) take(upTo int64) []hearth.LogProb {
	n := 0
	for n < len(l.pending) && l.pending[n].end <= upTo {
		n++
	}
	if n == 0 {
		return nil
	}
	out := make([]hearth.LogProb, n)
	for i := range n {
		out[i] = l.pending[i].lp
	}
	l.pending = append(l.pending[:0], l.pending[n:]...)
	return out
}

// cut forgets the tokens past output offset to: the engine rewound the output there.
func (l *tokenLog) cut(to int64) {
	if l == nil {
		return
	}
	for i, t := range l.pending {
		if t.end > to {
			l.pending = l.pending[:i]
			return
		}
	}
}

// eventLogprobs returns what ev takes of the log: the log probabilities of a text
// delta's tokens ([] when it covers none: the delta still says it has none), nil for
// every other event, whose tokens are dropped.
func (l *tokenLog) eventLogprobs(ev toolgrammar.Event) []hearth.LogProb {
	if l == nil {
		return nil
	}
	lps := l.take(ev.Offset)
	if ev.Kind != toolgrammar.TextDelta {
		return nil
	}
	if lps == nil {
		lps = []hearth.LogProb{}
	}
	return lps
}
