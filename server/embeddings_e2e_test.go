package server_test

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"hearth/cmd/hearth/wire"
	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
)

type embeddingList struct {
	Object string `json:"object"`
	Data   []struct {
		Object    string          `json:"object"`
		Index     int             `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
	Model string `json:"model"`
	Usage struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

func closeTo(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > 1e-4 {
			return false
		}
	}
	return true
}

// TestEmbeddingsE2E: /v1/embeddings is answered by hearth through the runtime's embed
// API; a script model's vectors are exact (Model.Embed): floats and base64 alike, the
// usage counting the inputs' tokens, the metrics counting them, and each bad request
// a 400 naming its field.
func TestEmbeddingsE2E(t *testing.T) {
	srv, _, _ := lanHearth(t, wire.Config{})
	m := testenv.Model(t, plain)
	texts := []string{"The kettle ships on Tuesday.", "hello"}
	if testenv.RunsLlamaServer(t) {
		// Ollama 0.30 and later start a generation model's llama-server without
		// embeddings: a 400 naming the model, and the requests' own errors as before.
		code, _, b := call(t, nil, "POST", srv.URL+"/v1/embeddings", "", `{"model":"`+plain+`","input":"hello"}`)
		if gotCode, gotParam := errCode(b); code != http.StatusBadRequest || gotCode != "invalid_value" || gotParam != "model" || !strings.Contains(string(b), plain) {
			t.Errorf("a generation model over Ollama %s: %d %s, want a 400 invalid_value on model naming it", testenv.RuntimeVersion(t), code, b)
		}
		checkEmbeddingsRequestErrors(t, srv)
		return
	}

	var list embeddingList
	convDo(t, srv, "", "POST", "/v1/embeddings", `{"model":"`+plain+`","input":["`+texts[0]+`","`+texts[1]+`"]}`, &list)
	if list.Object != "list" || list.Model != plain || len(list.Data) != 2 || list.Data[0].Index != 0 {
		t.Fatalf("list %+v", list)
	}
	wantTokens := 0
	for i, d := range list.Data {
		var v []float32
		if err := json.Unmarshal(d.Embedding, &v); err != nil {
			t.Fatal(err)
		}
		if want := m.Embed(texts[i]); d.Index != i || d.Object != "embedding" || !closeTo(v, want) {
			t.Errorf("input %d: index %d, %d dims, want %d dims equal to Model.Embed", i, d.Index, len(v), len(want))

		}
		wantTokens += m.CountTokens(texts[i])
	}
	if list.Usage.PromptTokens != wantTokens || list.Usage.TotalTokens != wantTokens {
		t.Errorf("usage %+v, want %d tokens", list.Usage, wantTokens)
	}

	// One string, as base64 (little-endian float32s).
	convDo(t, srv, "", "POST", "/v1/embeddings", `{"model":"`+plain+`","input":"hello","encoding_format":"base64"}`, &list)
	var enc string
	if len(list.Data) != 1 || json.Unmarshal(list.Data[0].Embedding, &enc) != nil {
		t.Fatalf("base64 list %+v", list)
	}
	raw, _ := base64.StdEncoding.DecodeString(enc)
	v := make([]float32, len(raw)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	if !closeTo(v, m.Embed("hello")) {
		t.Errorf("base64 vector differs from Model.Embed")
	}

	checkEmbeddingsRequestErrors(t, srv)

	_, _, metrics := call(t, nil, "GET", srv.URL+"/metrics", "", "")
	if !strings.Contains(string(metrics), `hearth_embedding_inputs_total{key="anonymous",model="`+strings.TrimSuffix(plain, ":latest")) {
		t.Errorf("metrics lack the embedded inputs:\n%s", grepLines(string(metrics), "embedding"))
	}
	if code, _, _ := call(t, nil, "GET", srv.URL+"/metrics", "", ""); code != http.StatusOK {
		t.Errorf("metrics: %d", code)
	}
}

// checkEmbeddingsRequestErrors: each bad request to /v1/embeddings is a 400 naming its
// field (an unknown model a 404).
func checkEmbeddingsRequestErrors(t *testing.T, srv *httptest.Server) {
	t.Helper()
	for _, tc := range []struct {
		name, body  string
		status      int
		code, param string
	}{
		{"no model", `{"input":"a"}`, 400, "missing_required_parameter", "model"},
		{"no input", `{"model":"` + plain + `"}`, 400, "missing_required_parameter", "input"},
		{"empty array", `{"model":"` + plain + `","input":[]}`, 400, "empty_array", "input"},
		{"empty string", `{"model":"` + plain + `","input":["a",""]}`, 400, "empty_string", "input[1]"},
		{"token array", `{"model":"` + plain + `","input":[[1,2]]}`, 400, "invalid_type", "input[0]"},
		{"bad format", `{"model":"` + plain + `","input":"a","encoding_format":"hex"}`, 400, "invalid_value", "encoding_format"},
		{"unknown model", `{"model":"no-such-model","input":"a"}`, 404, "model_not_found", "model"},
	} {
		code, _, b := call(t, nil, "POST", srv.URL+"/v1/embeddings", "", tc.body)
		gotCode, gotParam := errCode(b)
		if code != tc.status || gotCode != tc.code || gotParam != tc.param {
			t.Errorf("%s: %d %s, want %d %s on %q", tc.name, code, b, tc.status, tc.code, tc.param)
		}
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestEmbedModelE2E: the script embedding model runs on the runtime's own engine (BERT,
// mean pooling) and gives exactly the vectors scriptmodel.Embedder computes, so texts
// sharing words are close and search results in tests are exact.
func TestEmbedModelE2E(t *testing.T) {
	srv, _, _ := lanHearth(t, wire.Config{})
	e := testenv.Embedder(t)
	texts := []string{"The kettle ships on Tuesday.", "New hires get 25 days of leave.", "kettle"}
	body, _ := json.Marshal(map[string]any{"model": scriptmodel.EmbedModel, "input": texts})
	var list embeddingList
	convDo(t, srv, "", "POST", "/v1/embeddings", string(body), &list)
	if len(list.Data) != len(texts) {
		t.Fatalf("%d vectors for %d texts", len(list.Data), len(texts))
	}
	// Ollama 0.30 and later embed in llama.cpp's server, which frames every text with
	// [CLS] and [SEP].
	embed, framing := e.Embed, 0
	if testenv.RunsLlamaServer(t) {
		embed, framing = e.EmbedFramed, 2
	}
	vs := make([][]float32, len(texts))
	for i, d := range list.Data {
		json.Unmarshal(d.Embedding, &vs[i])
		if len(vs[i]) != e.Width() || !closeTo(vs[i], embed(texts[i])) {
			t.Errorf("%q: the runtime's vector (%d dims) differs from the Embedder's (%d)", texts[i], len(vs[i]), e.Width())
		}
	}
	// "The kettle ships on Tuesday." is 6 tokens: five words and the full stop.
	if want := 6 + len(e.Tokenize(texts[1])) + 1 + len(texts)*framing; list.Usage.PromptTokens != want {
		t.Errorf("usage %d tokens, want %d", list.Usage.PromptTokens, want)
	}
	cos := func(a, b []float32) (s float32) {
		for i := range a {
			s += a[i] * b[i]
		}
		return s
	}
	if near, far := cos(vs[2], vs[0]), cos(vs[2], vs[1]); !(near > far) {
		t.Errorf("'kettle' is as close to the leave policy (%v) as to the kettle's shipping (%v)", far, near)
	}
}
