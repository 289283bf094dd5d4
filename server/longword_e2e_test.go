package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"hearth"
	"hearth/cmd/hearth/wire"
	"hearth/engine/ollama/testenv"
	"hearth/filesearch"
	"hearth/scriptmodel"
)

// longWord is a word of 8,000 characters: the runtime's WordPiece tokenizer, given it,
// takes over a minute (time cubic in the word's length) and then reads it as 8,000
// one-letter tokens. hearth gives it a word the vocabulary lacks instead, read as one
// [UNK], which is what BERT's own WordPiece makes of any word over 100 characters.
var longWord = strings.Repeat("xyzzy", 1600)

// unknownWord is the text whose tokens, to the script embedding model, are those
// hearth has an over-long word embedded as: one [UNK].
const unknownWord = "\U00010330"

// TestEmbeddingsLongWordE2E: an input holding a word of 8,000 characters is embedded
// with the word as one [UNK] token: the vectors are those of the same text with an
// unknown word in its place, and the usage counts one token for the word.
func TestEmbeddingsLongWordE2E(t *testing.T) {
	srv, _, _ := lanHearth(t, wire.Config{})
	e := testenv.Embedder(t)
	embed, framing := e.Embed, 0
	if testenv.RunsLlamaServer(t) {
		embed, framing = e.EmbedFramed, 2
	}
	texts := []string{"the kettle " + longWord + " ships.", longWord}
	body, _ := json.Marshal(map[string]any{"model": scriptmodel.EmbedModel, "input": texts})
	var list embeddingList
	convDo(t, srv, "", "POST", "/v1/embeddings", string(body), &list)
	if len(list.Data) != len(texts) {
		t.Fatalf("%d vectors for %d texts", len(list.Data), len(texts))
	}
	for i, d := range list.Data {
		var v []float32
		json.Unmarshal(d.Embedding, &v)
		if want := embed(strings.ReplaceAll(texts[i], longWord, unknownWord)); !closeTo(v, want) {
			t.Errorf("input %d: the vector is not that of the long word as [UNK]", i)
		}
	}
	// the, kettle, [UNK], ships, "." and [UNK].
	if want := 5 + 1 + len(texts)*framing; list.Usage.PromptTokens != want {
		t.Errorf("usage %d tokens, want %d (the long word one [UNK])", list.Usage.PromptTokens, want)
	}
}

// TestVectorStoreLongWordE2E: a file made of one word of 50,000 characters is
// ingested, beside a file ingested at the same time, both completing (the long word is
// one [UNK] token); a search whose query holds a word of 8,000 characters finds the
// chunks with the scores of the query with an unknown word in its place; a query over
// 8,192 characters is a 400 naming it, and fails a file_search call.
func TestVectorStoreLongWordE2E(t *testing.T) {
	srv, hs, db := lanHearth(t, wire.Config{})
	_, alice, _ := db.CreateKey(context.Background(), "alice")
	e := testenv.Embedder(t)
	embed := e.Embed
	if testenv.RunsLlamaServer(t) {
		embed = e.EmbedFramed
	}
	long := uploadFile(t, srv, alice, "long.txt", "assistants", []byte(strings.Repeat("qwerty", 50000/6))).ID
	kettle := uploadFile(t, srv, alice, "kettle.md", "assistants", []byte("The kettle ships on Tuesday.\n")).ID
	var vs hearth.VectorStore
	convDo(t, srv, alice, "POST", "/v1/vector_stores", fmt.Sprintf(`{"name":"long","file_ids":[%q,%q],"hearth":{"embedding_model":%q}}`,
		long, kettle, scriptmodel.EmbedModel), &vs)
	vs = waitVectorStore(t, func() hearth.VectorStore {
		var v hearth.VectorStore
		convDo(t, srv, alice, "GET", "/v1/vector_stores/"+vs.ID, "", &v)
		return v
	})
	if vs.Status != "completed" || vs.FileCounts != (hearth.FileCounts{Completed: 2, Total: 2}) {
		t.Fatalf("ingested %+v", vs)
	}

	query := "kettle " + longWord
	var page hearth.VectorStoreSearchPage
	convDo(t, srv, alice, "POST", "/v1/vector_stores/"+vs.ID+"/search", fmt.Sprintf(`{"query":%q}`, query), &page)
	q := embed("kettle " + unknownWord)
	// The long file is one chunk, one [UNK]: the query's [UNK] makes it the nearer.
	if len(page.Data) != 2 || page.Data[0].FileID != long || page.Data[1].FileID != kettle {
		t.Fatalf("results %+v, want the long file's chunk, then the kettle's", page.Data)
	}
	for _, r := range page.Data {
		var want float64
		for i, x := range embed(strings.ReplaceAll(r.Content[0].Text, strings.Repeat("qwerty", 50000/6), unknownWord)) {
			want += float64(x) * float64(q[i])
		}
		if math.Abs(r.Score-want) > 1e-4 {
			t.Errorf("%s scores %.5f, want %.5f (the long words as [UNK])", r.Filename, r.Score, want)
		}
	}

	over := strings.Repeat("kettle ", 8192/7+1)
	for _, c := range []struct{ body, param string }{
		{fmt.Sprintf(`{"query":%q}`, over), "query"},
		{fmt.Sprintf(`{"query":["kettle",%q]}`, over), "query[1]"},
	} {
		code, _, b := call(t, nil, "POST", srv.URL+"/v1/vector_stores/"+vs.ID+"/search", alice, c.body)
		if gotCode, gotParam := errCode(b); code != http.StatusBadRequest || gotCode != "string_above_max_length" || gotParam != c.param {
			t.Errorf("a query of %d characters: %d %s, want a 400 string_above_max_length on %s", len(over), code, b, c.param)
		}
	}
	// A file_search call's query over the bound fails the call; the model reads why.
	_, err := hs.VectorStores.SearchVectorStores(context.Background(), "", filesearch.FileSearchQuery{VectorStoreIDs: []string{vs.ID}, Queries: []string{over}})
	if err == nil || !strings.Contains(err.Error(), "'query'") || !strings.Contains(err.Error(), "8192") {
		t.Errorf("a file_search query of %d characters: %v, want its length refused", len(over), err)
	}
	// 8,192 characters are a query.
	convDo(t, srv, alice, "POST", "/v1/vector_stores/"+vs.ID+"/search", fmt.Sprintf(`{"query":%q}`, over[:8192]), &page)
}

// hostDetail is what no error a client reads may hold: an IPv4 address, a port, a
// URL or a path.
var hostDetail = regexp.MustCompile(`\d+\.\d+\.\d+\.\d+|:\d{2,5}\b|://|/`)

// TestEmbeddingsRunnerKilledE2E: a runner killed while it embeds is the runtime's
// failure, a 5xx, whose message names neither the runner's address nor its port nor
// a path; a later request is served by a new runner.
func TestEmbeddingsRunnerKilledE2E(t *testing.T) {
	srv, _, _ := lanHearth(t, wire.Config{})
	testenv.Embedder(t)
	one := func(input any) (int, []byte) {
		body, _ := json.Marshal(map[string]any{"model": scriptmodel.EmbedModel, "input": input})
		code, _, b := call(t, nil, "POST", srv.URL+"/v1/embeddings", "", string(body))
		return code, b
	}
	if code, b := one("kettle"); code != http.StatusOK {
		t.Fatalf("warming the model: %d %s", code, b)
	}
	// Inputs enough to keep the runner busy a while; it is killed once, while busy.
	inputs := make([]string, 256)
	for i := range inputs {
		inputs[i] = strings.Repeat(fmt.Sprintf("kettle ships %d ", i), 300)
	}
	var code int
	var b []byte
	done := make(chan struct{})
	go func() {
		defer close(done)
		code, b = one(inputs)
	}()
	before := runnerCPU(t)
	killed := false
	for !killed {
		select {
		case <-done:
			t.Skip("the request was served before its runner could be killed")
		case <-time.After(20 * time.Millisecond):
		}
		for pid, ticks := range runnerCPU(t) {
			if ticks > before[pid]+5 {
				syscall.Kill(pid, syscall.SIGKILL)
				killed = true
			}
		}
	}
	<-done
	if code == http.StatusOK {
		t.Skip("the request was served before its runner was killed")
	}
	var failure struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	json.Unmarshal(b, &failure)
	if code < 500 || failure.Error.Message == "" || hostDetail.MatchString(failure.Error.Message) {
		t.Errorf("a killed runner: %d %s, want a 5xx without an address, port or path", code, b)
	}
	t.Logf("a killed runner: %d %s", code, b)
	if code, b := one("kettle"); code != http.StatusOK {
		t.Errorf("after the kill: %d %s", code, b)
	}
}
