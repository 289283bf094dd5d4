package server_test

import (
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"

	"hearth"
	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
)

// wantLogprobs is what a script model's output text must carry: one entry per piece
// the script writes after skip pieces (its answer, past reasoning), each the piece
// itself with its bytes, at log probability 0 (the successor's logit dominates every
// other by more than float32's exp can tell), and top alternatives ranked as the model's
// preference row ranks them: the piece, then EOS, '"' and '}', each at
// (weight - successorWeight) times the hidden state's scale.
//
// Ollama 0.30 and later report what llama.cpp's llama-server computes: the log of each
// alternative's float32 probability. A probability below float32's smallest (e^-103.3)
// is 0 there, reported as -math.MaxFloat32, and a special token's text (EOS) is empty;
// the ranking is still the model's. Over such a runtime those alternatives must come so.
func checkLogprobs(t *testing.T, where string, m *scriptmodel.Model, pieces []string, got []hearth.LogProb, top int) {
	t.Helper()
	float32Probs := testenv.RunsLlamaServer(t)
	if len(got) != len(pieces) {
		t.Fatalf("%s: %d logprobs, want one per piece (%d): %+v", where, len(got), len(pieces), got)
	}
	// The output head's weights are scaled by the final RMS norm of a one-hot
	// embedding: sqrt(width), less the norm's epsilon.
	scale := math.Sqrt(float64(m.Width()) / (1 + 1e-6*float64(m.Width())))
	alternatives := []struct {
		token  string
		weight float64
	}{{"", 64}, {scriptmodel.EOS, 14.0 / 14}, {`"`, 13.0 / 14}, {"}", 12.0 / 14}}
	for i, lp := range got {
		if lp.Token != pieces[i] {
			t.Errorf("%s: token %d is %q, want %q", where, i, lp.Token, pieces[i])
		}
		if string(intsToBytes(lp.Bytes)) != pieces[i] {
			t.Errorf("%s: token %d bytes %v, want those of %q", where, i, lp.Bytes, pieces[i])
		}
		if lp.Logprob != 0 {
			t.Errorf("%s: token %d logprob %v, want 0", where, i, lp.Logprob)
		}
		if len(lp.TopLogprobs) != top {
			t.Fatalf("%s: token %d has %d top logprobs, want %d", where, i, len(lp.TopLogprobs), top)
		}
		for k, alt := range lp.TopLogprobs {
			want := alternatives[k]
			if k == 0 {
				want.token = pieces[i]
			}
			wantLP := (want.weight - 64) * scale
			if float32Probs && wantLP < minFloat32Log {
				token := want.token
				if token == scriptmodel.EOS {
					token = ""
				}
				if alt.Token != token || alt.Logprob != -math.MaxFloat32 {
					t.Errorf("%s: token %d alternative %d is %q at %v, want %q at %v (Ollama %s)", where, i, k, alt.Token, alt.Logprob, token, -math.MaxFloat32, testenv.RuntimeVersion(t))
				}
				continue
			}
			if alt.Token != want.token || math.Abs(alt.Logprob-wantLP) > 1e-3*math.Max(1, math.Abs(wantLP)) {
				t.Errorf("%s: token %d alternative %d is %q at %v, want %q at %v", where, i, k, alt.Token, alt.Logprob, want.token, wantLP)
			}
		}
	}
}

// minFloat32Log is the log of float32's smallest positive (subnormal) number: a
// probability below it is 0 in float32.
var minFloat32Log = math.Log(math.SmallestNonzeroFloat32)

func intsToBytes(b []int) []byte {
	out := make([]byte, len(b))
	for i, x := range b {
		out[i] = byte(x)
	}
	return out
}

// deltaLogprobs are the logprobs of the output_text deltas among events, in order;
// each delta's tokens must spell the delta.
func deltaLogprobs(t *testing.T, where string, events []map[string]any) []hearth.LogProb {
	t.Helper()
	var all []hearth.LogProb
	for _, e := range events {
		if e["type"] != "response.output_text.delta" {
			continue
		}
		raw, _ := json.Marshal(e["logprobs"])
		var lps []hearth.LogProb
		if err := json.Unmarshal(raw, &lps); err != nil {
			t.Fatal(err)
		}
		var spelled strings.Builder
		for _, lp := range lps {
			spelled.WriteString(lp.Token)
		}
		if d, _ := e["delta"].(string); strings.TrimSpace(spelled.String()) != strings.TrimSpace(d) {
			t.Errorf("%s: delta %q carries the tokens of %q", where, d, spelled.String())
		}
		all = append(all, lps...)
	}
	return all
}

// outputText is the response's only output_text part.
func outputText(t *testing.T, r *hearth.Response) hearth.ContentPart {
	t.Helper()
	for _, it := range r.Output {
		if it.Type == hearth.ItemMessage {
			if len(it.Content) != 1 || it.Content[0].Type != hearth.PartOutputText {
				t.Fatalf("message content %+v, want one output_text", it.Content)
			}
			return it.Content[0]
		}
	}
	t.Fatalf("no message in %+v", r.Output)
	return hearth.ContentPart{}
}

// TestLogprobsE2E: include message.output_text.logprobs and top_logprobs give every
// output_text the exact log probabilities of its tokens, in JSON, in the SSE and
// WebSocket deltas (each delta carries its own tokens, which spell the delta), and on GET from the
// store; reasoning tokens are not output text and carry none; the enforced path (tools
// with tool_choice none) gives the same as the direct one. Without asking, the arrays
// stay empty.
func TestLogprobsE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	plain := testenv.Model(t, scriptmodel.PlainModel)
	ask := `"include":["message.output_text.logprobs"],"top_logprobs":3,"temperature":0,`

	r := createJSON(t, srv, `{"model":"`+scriptmodel.PlainModel+`",`+ask+`"input":"hi"}`)
	part := outputText(t, r)
	if part.Text != plain.Text(scriptmodel.EntryAssistant) {
		t.Fatalf("text %q", part.Text)
	}
	checkLogprobs(t, "json", plain, plain.Pieces(scriptmodel.EntryAssistant), part.Logprobs, 3)

	// Stored: GET gives them back.
	resp, b := get(t, srv.URL+"/v1/responses/"+r.ID)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: %d %s", resp.StatusCode, b)
	}
	var stored hearth.Response
	if err := json.Unmarshal(b, &stored); err != nil {
		t.Fatal(err)
	}
	checkLogprobs(t, "GET", plain, plain.Pieces(scriptmodel.EntryAssistant), outputText(t, &stored).Logprobs, 3)

	// Reasoning, then text: only the answer's tokens, over the direct path and the
	// enforced one.
	think := testenv.Model(t, scriptmodel.ReasoningModel)
	pieces := think.Pieces(scriptmodel.EntryAssistant)
	answer := pieces[piecesThrough(t, pieces, "</think>"):]
	for _, extra := range []string{"", toolsJSON + `,"tool_choice":"none",`} {
		where := "sse direct"
		if extra != "" {
			where = "sse enforced"
		}
		events, final := createSSE(t, srv, `{"model":"`+scriptmodel.ReasoningModel+`",`+ask+extra+`"stream":true,"input":"hi"}`)
		checkLogprobs(t, where, think, answer, outputText(t, final).Logprobs, 3)
		checkLogprobs(t, where+" deltas", think, answer, deltaLogprobs(t, where, events), 3)
	}

	// Over a WebSocket: the same events, the same tokens.
	ws := dialWS(t, srv, nil)
	ws.send(wsCreate(scriptmodel.ReasoningModel, ask+`"input":"hi"`), true)
	tr := ws.turn()
	if tr.err != nil {
		t.Fatalf("websocket create: %+v", *tr.err)
	}
	checkLogprobs(t, "websocket", think, answer, outputText(t, tr.final).Logprobs, 3)
	checkLogprobs(t, "websocket deltas", think, answer, deltaLogprobs(t, "websocket", tr.events), 3)

	// Under a grammar (text.format): the tokens the grammar forced on the model, with
	// the log probabilities the runtime gives them, those of the model's own
	// distribution before the grammar: the first token is "{" where the model would
	// write its script's first piece, and each token has the logprob its position's
	// alternatives list for it.
	r = createJSON(t, srv, `{"model":"`+scriptmodel.PlainModel+`",`+ask+`"text":{"format":{"type":"json_object"}},"input":"hi"}`)
	part = outputText(t, r)
	var spelled strings.Builder
	for i, lp := range part.Logprobs {
		spelled.WriteString(lp.Token)
		if len(lp.TopLogprobs) != 3 {
			t.Fatalf("forced token %d: %+v", i, lp)
		}
		for _, alt := range lp.TopLogprobs {
			if alt.Token == lp.Token && alt.Logprob != lp.Logprob {
				t.Errorf("forced token %d %q at %v, its alternatives say %v", i, lp.Token, lp.Logprob, alt.Logprob)
			}
		}
	}
	if spelled.String() != part.Text || !strings.HasPrefix(part.Text, "{") {
		t.Errorf("under a grammar: text %q, tokens spell %q", part.Text, spelled.String())
	}
	if first := part.Logprobs[0]; first.Logprob > -100 || first.TopLogprobs[0].Token != plain.Pieces(scriptmodel.EntryAssistant)[0] {
		t.Errorf("the forced first token %+v: want far below the script's own first piece", first)
	}

	// Not asked: none.
	r = createJSON(t, srv, `{"model":"`+scriptmodel.PlainModel+`","input":"hi"}`)
	if lps := outputText(t, r).Logprobs; len(lps) != 0 {
		t.Errorf("logprobs without asking: %+v", lps)
	}
	// include alone: the tokens, no alternatives.
	r = createJSON(t, srv, `{"model":"`+scriptmodel.PlainModel+`","include":["message.output_text.logprobs"],"input":"hi"}`)
	checkLogprobs(t, "include alone", plain, plain.Pieces(scriptmodel.EntryAssistant), outputText(t, r).Logprobs, 0)
}
