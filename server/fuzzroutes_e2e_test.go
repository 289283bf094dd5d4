package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"hearth"
	"hearth/engine/ollama/testenv"
	"hearth/respond"
	"hearth/scriptmodel"
	"hearth/server"
)

// The route fuzzer (TestFuzzRoutesE2E) sends mutated and hostile bodies to every route
// of a real hearth over HTTP (and WebSocket frames), with the embedded runtime and the
// script models, and asserts: no 5xx (nor an error event or failed response that is
// hearth's or the runtime's fault), no runner crash, no request left hanging, and the
// memory of hearth and of the runners back near its baseline afterwards.
//
// A plain `go test` replays the seeds below and the committed corpus
// (testdata/fuzzroutes/corpus.jsonl). HEARTH_FUZZ_ROUTES=N adds N bodies mutated from the
// seeds and the special sets (long runs, long words, big bodies, hostile PDFs). Every
// failure is collected, and the test fails at the end with a summary, so that one run
// lists every fault. docs/testing.md says how to run it.

// fuzzRouteCaseTime bounds one case: a request hearth has not answered by then hangs.
var fuzzRouteCaseTime = envDuration("HEARTH_FUZZ_ROUTES_CASE_TIMEOUT", 2*time.Minute)

func envDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil && d > 0 {
		return d
	}
	return def
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}

// fuzzTools is a function tool list for the tools model.
const fuzzTools = `"tools":[{"type":"function","name":"get_weather","description":"Weather of a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]`

// fuzzSeeds are valid requests of every route: the starting points of mutation, and
// replayed as they are by every run.
func fuzzSeeds() []fuzzCase {
	plainM, toolsM, embedM := scriptmodel.PlainModel, scriptmodel.ToolsModel, scriptmodel.EmbedModel
	txt := base64.StdEncoding.EncodeToString([]byte("# Notes\n\nThe kettle ships on Tuesday.\n"))
	j := func(route, method, path, body string) fuzzCase {
		return fuzzCase{Route: route, Method: method, Path: path, Body: body}
	}
	r := func(body string) fuzzCase { return j("responses", "POST", "/v1/responses", body) }
	chat := func(body string) fuzzCase { return j("chat", "POST", "/v1/chat/completions", body) }
	seeds := []fuzzCase{
		chat(`{"model":"` + plainM + `","messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"hi"}]}],"max_tokens":8,"stop":["x"],"seed":1}`),
		chat(`{"model":"` + toolsM + `","messages":[{"role":"user","content":"weather?"}],"stream":true,"stream_options":{"include_usage":true},"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}],"tool_choice":"required"}`),
		chat(`{"model":"` + toolsM + `","messages":[{"role":"user","content":"weather?"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},{"role":"tool","tool_call_id":"c1","content":"sunny"}],"response_format":{"type":"json_schema","json_schema":{"name":"n","strict":true,"schema":{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}}},"logprobs":true,"top_logprobs":2}`),
		r(`{"model":"` + plainM + `","input":"hi","max_output_tokens":16}`),
		r(`{"model":"` + plainM + `","input":"hi","stream":true}`),
		r(`{"model":"` + plainM + `","instructions":"be brief","input":[{"role":"user","content":[{"type":"input_text","text":"hi"}]},{"role":"assistant","content":"hello"},{"type":"message","role":"user","content":"again"}],"metadata":{"k":"v"},"temperature":0,"top_p":1}`),
		r(`{"model":"` + toolsM + `","input":"weather?",` + fuzzTools + `}`),
		r(`{"model":"` + toolsM + `","input":"weather?","stream":true,` + fuzzTools + `,"tool_choice":"required","parallel_tool_calls":false}`),
		r(`{"model":"` + toolsM + `","input":[{"type":"function_call","call_id":"c1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},{"type":"function_call_output","call_id":"c1","output":"sunny"}],` + fuzzTools + `}`),
		r(`{"model":"` + plainM + `","input":"more","previous_response_id":"@resp@","store":true}`),
		r(`{"model":"` + plainM + `","input":"more","conversation":"@conv@"}`),
		r(`{"model":"` + plainM + `","input":[{"role":"user","content":[{"type":"input_text","text":"read"},{"type":"input_file","file_id":"@file@"}]}]}`),
		r(`{"model":"` + plainM + `","input":[{"role":"user","content":[{"type":"input_text","text":"read"},{"type":"input_file","filename":"notes.md","file_data":"data:text/markdown;base64,` + txt + `"}]}]}`),
		r(`{"model":"` + plainM + `","input":"search","tools":[{"type":"file_search","vector_store_ids":["@vs@"],"max_num_results":2}],"include":["file_search_call.results"]}`),
		r(`{"model":"` + plainM + `","input":"hi","store":false,"text":{"format":{"type":"json_schema","name":"n","schema":{"type":"object","properties":{"a":{"type":"string","maxLength":8}},"required":["a"]}}}}`),
		r(`{"model":"` + plainM + `","input":"hi","background":true,"truncation":"auto","reasoning":{"effort":"low"}}`),
		r(`{"model":"` + plainM + `","input":[{"type":"item_reference","id":"@item@"},{"role":"user","content":"and?"}]}`),
		j("compact", "POST", "/v1/responses/compact", `{"model":"`+plainM+`","input":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}`),
		j("compact", "POST", "/v1/responses/compact", `{"model":"`+plainM+`","previous_response_id":"@resp@","instructions":"sum up"}`),
		j("responses/{id}", "GET", "/v1/responses/@resp@", ""),
		j("responses/{id}", "GET", "/v1/responses/@resp@?stream=true&starting_after=1", ""),
		j("responses/{id}", "DELETE", "/v1/responses/@resp@", ""),
		j("responses/{id}", "GET", "/v1/responses/@resp@/input_items?limit=2&order=asc", ""),
		j("responses/{id}", "POST", "/v1/responses/@resp@/cancel", ""),
		j("conversations", "POST", "/v1/conversations", `{"items":[{"type":"message","role":"user","content":"hi"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"hello"}]}],"metadata":{"k":"v"}}`),
		j("conversations", "GET", "/v1/conversations/@conv@", ""),
		j("conversations", "POST", "/v1/conversations/@conv@", `{"metadata":{"topic":"kettles"}}`),
		j("conversations", "DELETE", "/v1/conversations/@conv@", ""),
		j("conversations/items", "GET", "/v1/conversations/@conv@/items?limit=2&order=desc", ""),
		j("conversations/items", "POST", "/v1/conversations/@conv@/items", `{"items":[{"type":"message","role":"user","content":[{"type":"input_text","text":"more"}]}]}`),
		j("conversations/items", "POST", "/v1/conversations/@conv@/items", `{"items":[{"type":"compaction","encrypted_content":"gAAAAA"},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}]}`),
		j("conversations/items", "GET", "/v1/conversations/@conv@/items/@item@", ""),
		j("conversations/items", "DELETE", "/v1/conversations/@conv@/items/@item@", ""),
		j("files", "GET", "/v1/files?purpose=assistants&limit=2", ""),
		j("files", "GET", "/v1/files/@file@", ""),
		j("files", "GET", "/v1/files/@file@/content", ""),
		j("files", "DELETE", "/v1/files/@file@", ""),
		j("vector_stores", "POST", "/v1/vector_stores", `{"name":"docs","file_ids":["@file@"],"metadata":{"k":"v"},"chunking_strategy":{"type":"static","static":{"max_chunk_size_tokens":100,"chunk_overlap_tokens":20}},"expires_after":{"anchor":"last_active_at","days":7},"hearth":{"embedding_model":"`+embedM+`"}}`),
		j("vector_stores", "GET", "/v1/vector_stores?limit=2", ""),
		j("vector_stores", "GET", "/v1/vector_stores/@vs@", ""),
		j("vector_stores", "POST", "/v1/vector_stores/@vs@", `{"name":"renamed","metadata":{"a":"b"}}`),
		j("vector_stores", "DELETE", "/v1/vector_stores/@vs@", ""),
		j("vector_stores/search", "POST", "/v1/vector_stores/@vs@/search", `{"query":"kettle","max_num_results":3,"filters":{"type":"eq","key":"team","value":"ops"},"ranking_options":{"score_threshold":0.1},"rewrite_query":false}`),
		j("vector_stores/search", "POST", "/v1/vector_stores/@vs@/search", `{"query":["kettle","leave"]}`),
		j("vector_stores/files", "POST", "/v1/vector_stores/@vs@/files", `{"file_id":"@file@","attributes":{"team":"ops","year":2025}}`),
		j("vector_stores/files", "GET", "/v1/vector_stores/@vs@/files?limit=5&filter=completed", ""),
		j("vector_stores/files", "GET", "/v1/vector_stores/@vs@/files/@file@", ""),
		j("vector_stores/files", "POST", "/v1/vector_stores/@vs@/files/@file@", `{"attributes":{"team":"dev"}}`),
		j("vector_stores/files", "DELETE", "/v1/vector_stores/@vs@/files/@file@", ""),
		j("vector_stores/file_batches", "POST", "/v1/vector_stores/@vs@/file_batches", `{"file_ids":["@file@"],"attributes":{"k":"v"}}`),
		j("vector_stores/file_batches", "POST", "/v1/vector_stores/@vs@/file_batches", `{"files":[{"file_id":"@file@","attributes":{"team":"ops"}}]}`),
		j("vector_stores/file_batches", "GET", "/v1/vector_stores/@vs@/file_batches/@batch@", ""),
		j("vector_stores/file_batches", "POST", "/v1/vector_stores/@vs@/file_batches/@batch@/cancel", ""),
		j("vector_stores/file_batches", "GET", "/v1/vector_stores/@vs@/file_batches/@batch@/files", ""),
		j("embeddings", "POST", "/v1/embeddings", `{"model":"`+embedM+`","input":"the kettle"}`),
		j("embeddings", "POST", "/v1/embeddings", `{"model":"`+embedM+`","input":["a","b c"],"encoding_format":"base64","dimensions":8}`),
		j("models", "GET", "/v1/models", ""),
	}
	up, ct := multipartBody("assistants", "notes.md", []byte("# Notes\n\nhello\n"))
	f := fuzzCase{Route: "files", Method: "POST", Path: "/v1/files", ContentType: ct}
	f.setBody(up)
	seeds = append(seeds, f)
	for _, extra := range []string{`"input":"hi"`, `"input":"weather?",` + fuzzTools + `,"tool_choice":"auto"`, `"input":"more","previous_response_id":"@resp@"`} {
		model := plainM
		if strings.Contains(extra, "tools") {
			model = toolsM
		}
		seeds = append(seeds, fuzzCase{Route: "ws", Method: "GET", Path: "/v1/responses", WS: true,
			Body: `{"type":"response.create","model":"` + model + `",` + extra + `}`})
	}
	return seeds
}

// Special sets: the characters of the long runs and where they are placed.
var (
	runChars = map[string]string{
		"quote": `"`, "lbrace": "{", "rbrace": "}", "lt": "<", "pipe": "|", "tilde": "~", "hash": "#",
		"percent": "%", "backslash": `\`, "lbracket": "[", "backtick": "`", "apos": "'",
		"letter": "a", "digit": "7", "space": " ", "newline": "\n", "cjk": "漢", "emoji": "😀",
	}
	runPlaces = []string{"instructions", "input", "stream", "tool", "conversation", "items", "file_data", "ws", "compact", "embed", "search"}
)

// placeText puts s where place says, as a whole request.
func placeText(place, s string) fuzzCase {
	q := func(v string) string { b, _ := json.Marshal(v); return string(b) }
	plainM := `"model":"` + scriptmodel.PlainModel + `"`
	resp := func(body string) fuzzCase {
		return fuzzCase{Route: "responses", Method: "POST", Path: "/v1/responses", Body: body}
	}
	switch place {
	case "instructions":
		return resp(`{` + plainM + `,"instructions":` + q(s) + `,"input":"hi","max_output_tokens":8}`)
	case "input":
		return resp(`{` + plainM + `,"input":` + q(s) + `,"max_output_tokens":8}`)
	case "stream":
		return resp(`{` + plainM + `,"input":[{"role":"user","content":[{"type":"input_text","text":` + q(s) + `}]}],"stream":true,"max_output_tokens":8}`)
	case "tool":
		return resp(`{"model":"` + scriptmodel.ToolsModel + `","input":"weather?","tools":[{"type":"function","name":"get_weather","description":` + q(s) + `,"parameters":{"type":"object","properties":{"city":{"type":"string","description":` + q(s[:len(s)/2]) + `}}}}],"max_output_tokens":8}`)
	case "conversation":
		return fuzzCase{Route: "conversations", Method: "POST", Path: "/v1/conversations", Body: `{"items":[{"type":"message","role":"user","content":` + q(s) + `}]}`}
	case "items":
		return fuzzCase{Route: "conversations/items", Method: "POST", Path: "/v1/conversations/@conv@/items", Body: `{"items":[{"type":"message","role":"user","content":[{"type":"input_text","text":` + q(s) + `}]}]}`}
	case "file_data":
		return resp(`{` + plainM + `,"input":[{"role":"user","content":[{"type":"input_file","filename":"long.txt","file_data":"data:text/plain;base64,` + base64.StdEncoding.EncodeToString([]byte(s)) + `"}]}],"max_output_tokens":8}`)
	case "ws":
		return fuzzCase{Route: "ws", Method: "GET", Path: "/v1/responses", WS: true, Body: `{"type":"response.create",` + plainM + `,"instructions":` + q(s) + `,"input":"hi","max_output_tokens":8}`}
	case "compact":
		return fuzzCase{Route: "compact", Method: "POST", Path: "/v1/responses/compact", Body: `{` + plainM + `,"input":[{"role":"user","content":` + q(s) + `},{"role":"assistant","content":"ok"}]}`}
	case "embed":
		return fuzzCase{Route: "embeddings", Method: "POST", Path: "/v1/embeddings", Body: `{"model":"` + scriptmodel.EmbedModel + `","input":` + q(s) + `}`}
	case "search":
		return fuzzCase{Route: "vector_stores/search", Method: "POST", Path: "/v1/vector_stores/@vs@/search", Body: `{"query":` + q(s) + `}`}
	}
	panic("no place " + place)
}

// uploadCase uploads content as name; attach makes the case attach it to the run's
// vector store and wait for its ingestion.
func uploadCase(name string, content []byte, attach bool) fuzzCase {
	b, ct := multipartBody("assistants", name, content)
	c := fuzzCase{Route: "files", Method: "POST", Path: "/v1/files", ContentType: ct, attach: attach}
	if attach {
		c.Route = "vector_stores/files"
	}
	c.body = b
	return c
}

// fuzzLongWord is a word of n characters: one letter repeated, or letters without repeats
// nearby (kind "mixed"), which tokenizers split worst.
func fuzzLongWord(kind string, n int) string {
	if kind == "same" {
		return strings.Repeat("a", n)
	}
	var b strings.Builder
	x := uint32(2463534242)
	for range n {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b.WriteByte("abcdefghijklmnopqrstuvwxyz"[x%26])
	}
	return b.String()
}

// expandGen makes the request a special-set name describes:
//
//	run:<place>:<char>:<bytes>    a long run of one character (runChars) placed by placeText
//	word:<place>:<kind>:<chars>   a long single word (same|mixed); place may also be vsfile
//	big:<what>                    a body near or over a limit
//	pdf:<name>:<place>            a hostile PDF (hostilePDFs) as input_file, upload or vsfile
func expandGen(gen string, maxBody int64) (fuzzCase, error) {
	f := strings.Split(gen, ":")
	bad := fmt.Errorf("bad generated case %q", gen)
	var c fuzzCase
	switch {
	case f[0] == "run" && len(f) == 4:
		ch, ok := runChars[f[2]]
		n, err := strconv.Atoi(f[3])
		if !ok || err != nil {
			return c, bad
		}
		c = placeText(f[1], strings.Repeat(ch, n/len(ch)))
	case f[0] == "word" && len(f) == 4:
		n, err := strconv.Atoi(f[3])
		if err != nil {
			return c, bad
		}
		w := fuzzLongWord(f[2], n)
		if f[1] == "vsfile" {
			c = uploadCase("word.txt", []byte("The word is "+w+" and that is all.\n"), true)
		} else {
			c = placeText(f[1], w)
		}
	case f[0] == "big" && len(f) == 2:
		q := func(v string) string { b, _ := json.Marshal(v); return string(b) }
		plainM := `"model":"` + scriptmodel.PlainModel + `"`
		c = fuzzCase{Route: "responses", Method: "POST", Path: "/v1/responses"}
		switch f[1] {
		case "body-under": // a body just under the limit: a valid request of one long input
			c.Body = `{` + plainM + `,"input":` + q(strings.Repeat("lorem ipsum ", int(maxBody-1024)/12)) + `}`
		case "body-over":
			c.Body = `{` + plainM + `,"input":` + q(strings.Repeat("lorem ipsum ", int(maxBody+1024)/12)) + `}`
		case "items-over":
			c.Body = `{` + plainM + `,"input":[` + strings.TrimSuffix(strings.Repeat(`{"role":"user","content":"x"},`, respond.DefaultMaxInputItems+1), ",") + `]}`
		case "items-at":
			c.Body = `{` + plainM + `,"input":[` + strings.TrimSuffix(strings.Repeat(`{"role":"user","content":"x"},`, respond.DefaultMaxInputItems), ",") + `]}`
		case "tools-over":
			var tools []string
			for i := range respond.DefaultMaxTools + 1 {
				tools = append(tools, fmt.Sprintf(`{"type":"function","name":"f%d","parameters":{"type":"object"}}`, i))
			}
			c.Body = `{"model":"` + scriptmodel.ToolsModel + `","input":"hi","tools":[` + strings.Join(tools, ",") + `]}`
		case "metadata":
			var kv []string
			for i := range 5000 {
				kv = append(kv, fmt.Sprintf(`"k%d":%s`, i, q(strings.Repeat("v", 600))))
			}
			c.Body = `{` + plainM + `,"input":"hi","metadata":{` + strings.Join(kv, ",") + `}}`
		case "conv-items":
			c = fuzzCase{Route: "conversations/items", Method: "POST", Path: "/v1/conversations/@conv@/items",
				Body: `{"items":[` + strings.TrimSuffix(strings.Repeat(`{"type":"message","role":"user","content":"x"},`, 5000), ",") + `]}`}
		case "embed-many":
			c = fuzzCase{Route: "embeddings", Method: "POST", Path: "/v1/embeddings",
				Body: `{"model":"` + scriptmodel.EmbedModel + `","input":[` + strings.TrimSuffix(strings.Repeat(`"word",`, 10000), ",") + `]}`}
		case "upload-under":
			c = uploadCase("big.txt", bytes.Repeat([]byte("lorem ipsum\n"), int(respond.DefaultMaxFileBytes-4096)/12), false)
		case "upload-over":
			c = uploadCase("big.txt", bytes.Repeat([]byte("lorem ipsum\n"), int(respond.DefaultMaxFileBytes+4096)/12), false)
		case "ws-over":
			c = fuzzCase{Route: "ws", Method: "GET", Path: "/v1/responses", WS: true,
				Body: `{"type":"response.create",` + plainM + `,"input":` + q(strings.Repeat("lorem ipsum ", int(maxBody+1024)/12)) + `}`}
		default:
			return c, bad
		}
	case f[0] == "pdf" && len(f) == 3:
		mk, ok := hostilePDFs[f[1]]
		if !ok {
			return c, bad
		}
		pdf := mk()
		switch f[2] {
		case "input_file":
			c = fuzzCase{Route: "responses", Method: "POST", Path: "/v1/responses",
				Body: `{"model":"` + scriptmodel.PlainModel + `","input":[{"role":"user","content":[{"type":"input_text","text":"read"},{"type":"input_file","filename":"h.pdf","file_data":"data:application/pdf;base64,` + base64.StdEncoding.EncodeToString(pdf) + `"}]}],"max_output_tokens":8}`}
		case "upload":
			c = uploadCase("h.pdf", pdf, false)
		case "vsfile":
			c = uploadCase("h.pdf", pdf, true)
		default:
			return c, bad
		}
	default:
		return c, bad
	}
	c.Gen = gen
	if c.body == nil {
		c.body = []byte(c.Body)
	}
	return c, nil
}

// specialSets lists the generated cases of a full run.
func specialSets() []string {
	var gens []string
	var chars []string
	for name := range runChars {
		chars = append(chars, name)
	}
	sort.Strings(chars)
	for _, ch := range chars {
		for _, place := range runPlaces {
			gens = append(gens, "run:"+place+":"+ch+":30000")
		}
		for _, place := range []string{"instructions", "input", "tool", "conversation", "file_data", "search"} {
			gens = append(gens, "run:"+place+":"+ch+":300000")
		}
	}
	for _, place := range []string{"search", "embed", "input", "file_data", "vsfile"} {
		for _, n := range []int{1000, 3000, 10000} {
			for _, kind := range []string{"same", "mixed"} {
				gens = append(gens, fmt.Sprintf("word:%s:%s:%d", place, kind, n))
			}
		}
	}
	for _, b := range []string{"body-under", "body-over", "items-over", "items-at", "tools-over", "metadata", "conv-items", "embed-many", "upload-under", "upload-over", "ws-over"} {
		gens = append(gens, "big:"+b)
	}
	for _, name := range hostilePDFNames() {
		for _, place := range []string{"input_file", "upload", "vsfile"} {
			gens = append(gens, "pdf:"+name+":"+place)
		}
	}
	return gens
}

// runnerCrashTap counts the embedded runtime's log lines of a runner that died.
type runnerCrashTap struct {
	inner slog.Handler
	n     *atomic.Int64
	last  *atomic.Value
}

func (h runnerCrashTap) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn || h.inner.Enabled(ctx, l)
}

func (h runnerCrashTap) Handle(ctx context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "llama runner terminated") || strings.Contains(r.Message, "runner process no longer running") {
		var b strings.Builder
		b.WriteString(r.Message)
		r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&b, " %s=%v", a.Key, a.Value); return true })
		// A runner the test ended itself (SIGKILL, after a case hung) is reported by
		// the runtime when the next request finds it gone: not a crash. A runner
		// that crashes dies of its own signal (SIGSEGV, SIGABRT) or exit status.
		if !strings.Contains(b.String(), "signal: killed") {
			h.n.Add(1)
			h.last.Store(b.String())
		}
	}
	if !h.inner.Enabled(ctx, r.Level) {
		return nil
	}
	return h.inner.Handle(ctx, r)
}

func (h runnerCrashTap) WithAttrs(a []slog.Attr) slog.Handler {
	return runnerCrashTap{inner: h.inner.WithAttrs(a), n: h.n, last: h.last}
}

func (h runnerCrashTap) WithGroup(g string) slog.Handler {
	return runnerCrashTap{inner: h.inner.WithGroup(g), n: h.n, last: h.last}
}

// fuzzFixtures are the objects the placeholders stand for, remade when a case deletes
// one.
type fuzzFixtures struct {
	t   *testing.T
	srv *httptest.Server
	ids map[string]string
}

func (fx *fuzzFixtures) do(method, path, body string, out any) {
	st, _, b := call(fx.t, nil, method, fx.srv.URL+path, "", body)
	if st != 200 {
		fx.t.Fatalf("fixture %s %s: %d %s", method, path, st, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			fx.t.Fatalf("fixture %s %s: %v", method, path, err)
		}
	}
}

// make remakes the fixtures of kind ("" for all).
func (fx *fuzzFixtures) make(kind string) {
	all := kind == ""
	if all || kind == "file" {
		fx.ids["@file@"] = uploadFile(fx.t, fx.srv, "", "notes.md", "assistants", []byte("# Notes\n\nThe kettle ships on Tuesday.\nNew hires get 20 days of leave.\n")).ID
	}
	if all || kind == "vs" || kind == "file" {
		var vs hearth.VectorStore
		fx.do("POST", "/v1/vector_stores", fmt.Sprintf(`{"name":"fuzz","file_ids":[%q],"hearth":{"embedding_model":%q}}`, fx.ids["@file@"], scriptmodel.EmbedModel), &vs)
		fx.ids["@vs@"] = vs.ID
		var batch hearth.VectorStoreFilesBatch
		fx.do("POST", "/v1/vector_stores/"+vs.ID+"/file_batches", fmt.Sprintf(`{"file_ids":[%q]}`, fx.ids["@file@"]), &batch)
		fx.ids["@batch@"] = batch.ID
	}
	if all || kind == "resp" {
		var r hearth.Response
		fx.do("POST", "/v1/responses", `{"model":"`+scriptmodel.PlainModel+`","input":"hi","max_output_tokens":16}`, &r)
		fx.ids["@resp@"] = r.ID
	}
	if all || kind == "conv" || kind == "item" {
		var c struct{ ID string }
		fx.do("POST", "/v1/conversations", `{"items":[{"type":"message","role":"user","content":"hi"},{"type":"message","role":"user","content":"again"}]}`, &c)
		fx.ids["@conv@"] = c.ID
		var page struct{ Data []struct{ ID string } }
		fx.do("GET", "/v1/conversations/"+c.ID+"/items", "", &page)
		if len(page.Data) == 0 {
			fx.t.Fatal("fixture conversation without items")
		}
		fx.ids["@item@"] = page.Data[0].ID
	}
}

// afterDelete remakes what a successful DELETE (or cancel) of path removed.
func (fx *fuzzFixtures) afterDelete(path string) {
	p := strings.Split(strings.SplitN(path, "?", 2)[0], "/")
	switch {
	case len(p) >= 3 && p[2] == "responses":
		fx.make("resp")
	case len(p) == 4 && p[2] == "conversations":
		fx.make("conv")
	case len(p) >= 5 && p[2] == "conversations":
		fx.make("item")
	case len(p) >= 3 && p[2] == "files":
		fx.make("file")
	case len(p) >= 3 && p[2] == "vector_stores":
		fx.make("vs")
	}
}

func (fx *fuzzFixtures) fill(s []byte) []byte {
	for _, p := range placeholders {
		s = bytes.ReplaceAll(s, []byte(p), []byte(fx.ids[p]))
	}
	return s
}

// fuzzOutcome is what one case got: its status (0 for none) and, when it failed, why.
type fuzzOutcome struct {
	status   int
	fail     string
	timedOut bool // no answer in fuzzRouteCaseTime
}

// fuzzRunner sends cases and keeps the tally.
type fuzzRunner struct {
	t       *testing.T
	srv     *httptest.Server
	fx      *fuzzFixtures
	crashes *atomic.Int64
	last    *atomic.Value
	client  *http.Client

	mu       sync.Mutex
	sent     map[string]int            // route -> cases
	classes  map[string]map[string]int // route -> outcome class -> count
	failures []fuzzFailure
	record   *os.File
	recEvery int
	n        int
	killed   int       // runners ended after a case timed out
	stopAt   time.Time // no new case after this (zero: none)
}

type fuzzFailure struct {
	c       fuzzCase
	outcome fuzzOutcome
	min     string // the minimized body, when minimizing helped
}

func (fr *fuzzRunner) run(c fuzzCase) fuzzOutcome {
	before := fr.crashes.Load()
	out := fr.send(c)
	if n := fr.crashes.Load() - before; n > 0 {
		last, _ := fr.last.Load().(string)
		out.fail = strings.TrimSpace(out.fail + fmt.Sprintf(" | runner crash x%d: %s", n, last))
	}
	if out.timedOut {
		// A runner busy for ever with one request (a tokenizer on a pathological
		// input) would make every later case of its model time out too: end it, as
		// an operator would, so the rest of the run still tests something. The
		// runtime's log lines of that kill are not counted against the next case.
		testenv.KillRunners()
		time.Sleep(3 * time.Second)
		fr.killed++
	}
	class := "none"
	switch {
	case out.status >= 500:
		class = "5xx"
	case out.status >= 400:
		class = "4xx"
	case out.status >= 200:
		class = "2xx"
	}
	if out.fail != "" {
		class += "+fail"
	}
	fr.mu.Lock()
	fr.n++
	fr.sent[c.Route]++
	if fr.classes[c.Route] == nil {
		fr.classes[c.Route] = map[string]int{}
	}
	fr.classes[c.Route][class]++
	fr.mu.Unlock()
	if out.fail != "" {
		f := fuzzFailure{c: c, outcome: out}
		if out.status >= 500 && !c.WS && c.ContentType == "" && len(c.bytesOf()) < 64<<10 {
			f.min = fr.minimize(c)
		}
		// Keep the start of a big body only: the failures must not hold the memory
		// the run measures (a generated case can be made again from its name).
		if b := c.bytesOf(); len(b) > 64<<10 {
			f.c.setBody(append([]byte(nil), b[:64<<10]...))
		}
		fr.failures = append(fr.failures, f)
		fr.t.Logf("FAIL %s %s %s [%s]: %s; body %s", c.Method, c.Path, c.label(), c.Found, out.fail, clip(c.bytesOf(), 300))
	}
	if fr.record != nil && (out.fail != "" || c.Gen != "" || fr.n%fr.recEvery == 0) {
		rc := c
		if out.fail != "" && rc.Found == "" {
			rc.Found = "failed: " + clip([]byte(out.fail), 120)
		}
		if rc.Gen != "" {
			rc.Body, rc.BodyB64, rc.ContentType, rc.Path, rc.Method, rc.Route = "", "", "", "", "", ""
		}
		b, _ := json.Marshal(rc)
		fr.record.Write(append(b, '\n'))
	}
	if out.status >= 200 && out.status < 300 && (c.Method == "DELETE" || strings.HasSuffix(c.Path, "/cancel")) {
		fr.fx.afterDelete(c.Path)
	}
	return out
}

func clip(b []byte, n int) string {
	if len(b) <= n {
		return strconv.Quote(string(b))
	}
	return fmt.Sprintf("%q... (%d bytes)", b[:n], len(b))
}

// minimize drops the top-level fields of a JSON body that a 5xx does not need.
func (fr *fuzzRunner) minimize(c fuzzCase) string {
	tree, err := parseJSON(c.bytesOf())
	if err != nil || tree.kind != 'o' {
		return ""
	}
	changed := false
	for i := 0; i < len(tree.keys) && i < 16; {
		try := tree.clone()
		try.keys = append(try.keys[:i], try.keys[i+1:]...)
		try.vals = append(try.vals[:i], try.vals[i+1:]...)
		tc := c
		tc.body = try.bytes()
		if out := fr.send(tc); out.status >= 500 {
			tree, changed = try, true
			continue
		}
		i++
	}
	if !changed {
		return ""
	}
	return string(tree.bytes())
}

func (fr *fuzzRunner) send(c fuzzCase) fuzzOutcome {
	body := fr.fx.fill(c.bytesOf())
	path := string(fr.fx.fill([]byte(c.Path)))
	ctx, cancel := context.WithTimeout(context.Background(), fuzzRouteCaseTime)
	defer cancel()
	if c.WS {
		return fr.sendWS(ctx, body)
	}
	req, err := http.NewRequestWithContext(ctx, c.Method, fr.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		return fuzzOutcome{} // a path no client could send
	}
	if len(body) == 0 {
		req.Body, req.ContentLength = http.NoBody, 0
	} else {
		req.Header.Set("Content-Type", cmpOr(c.ContentType, "application/json"))
	}
	resp, err := fr.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fuzzOutcome{fail: fmt.Sprintf("no answer in %s", fuzzRouteCaseTime), timedOut: true}
		}
		return fuzzOutcome{fail: "transport: " + err.Error()}
	}
	defer resp.Body.Close()
	out := fuzzOutcome{status: resp.StatusCode}
	var b []byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		out.fail = checkSSE(resp.Body)
	} else {
		b, err = io.ReadAll(io.LimitReader(resp.Body, 256<<20))
		switch {
		case err != nil && ctx.Err() != nil:
			out.fail, out.timedOut = fmt.Sprintf("body not finished in %s", fuzzRouteCaseTime), true
		case resp.StatusCode >= 500:
			out.fail = fmt.Sprintf("status %d: %s", resp.StatusCode, clip(b, 400))
		case resp.StatusCode >= 400:
			var e struct {
				Error *struct{ Message, Type string }
			}
			if json.Unmarshal(b, &e) != nil || e.Error == nil || e.Error.Message == "" {
				out.fail = fmt.Sprintf("status %d without an error envelope: %s", resp.StatusCode, clip(b, 200))
			}
		default:
			out.fail = checkFailed(b)
		}
	}
	if out.fail == "" && c.attach && resp.StatusCode == 200 {
		out.fail = fr.attach(ctx, b)
	}
	if out.fail != "" && ctx.Err() != nil {
		out.timedOut = true
	}
	return out
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// checkFailed reports a response that failed by hearth's or the runtime's fault.
func checkFailed(b []byte) string {
	var r struct {
		Object, Status string
		Error          *struct{ Code, Message string }
	}
	if json.Unmarshal(b, &r) == nil && r.Object == "response" && r.Status == hearth.StatusFailed {
		return "response failed: " + clip(b, 400)
	}
	return ""
}

// checkSSE reads a stream and reports an error event or failed response.
func checkSSE(body io.Reader) string {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	done := false
	for sc.Scan() {
		line := sc.Bytes()
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok {
			continue
		}
		if string(data) == "[DONE]" {
			done = true
			continue
		}
		var ev struct{ Type string }
		json.Unmarshal(data, &ev)
		switch ev.Type {
		case "error":
			return "stream error event: " + clip(data, 400)
		case "response.failed":
			return "stream response.failed: " + clip(data, 400)
		}
	}
	if err := sc.Err(); err != nil {
		return "stream cut: " + err.Error()
	}
	if !done {
		return "stream without [DONE]"
	}
	return ""
}

// attach attaches the file an upload made to the run's vector store and waits for its
// ingestion to end (completed or failed: a file hearth refuses is no fault), then
// searches the store.
func (fr *fuzzRunner) attach(ctx context.Context, upload []byte) string {
	var f hearth.File
	if err := json.Unmarshal(upload, &f); err != nil || f.ID == "" {
		return "" // the upload answered something other than a file: judged already
	}
	vs := fr.fx.ids["@vs@"]
	req := func(method, path, body string) (int, []byte, error) {
		r, _ := http.NewRequestWithContext(ctx, method, fr.srv.URL+path, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		resp, err := fr.client.Do(r)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b, nil
	}
	st, b, err := req("POST", "/v1/vector_stores/"+vs+"/files", `{"file_id":"`+f.ID+`"}`)
	if err != nil || st >= 500 {
		return fmt.Sprintf("attach: %d %v %s", st, err, clip(b, 300))
	}
	for {
		st, b, err = req("GET", "/v1/vector_stores/"+vs+"/files/"+f.ID, "")
		if err != nil || st >= 500 {
			return fmt.Sprintf("ingestion status: %d %v %s", st, err, clip(b, 300))
		}
		var vf struct {
			Status    string
			LastError *struct{ Code, Message string } `json:"last_error"`
		}
		json.Unmarshal(b, &vf)
		if vf.Status != "in_progress" {
			if vf.LastError != nil && vf.LastError.Code == "server_error" {
				return "ingestion failed by a server error: " + clip(b, 300)
			}
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Sprintf("ingestion not finished in %s", fuzzRouteCaseTime)
		case <-time.After(200 * time.Millisecond):
		}
	}
	st, b, err = req("POST", "/v1/vector_stores/"+vs+"/search", `{"query":"kettle"}`)
	if err != nil || st >= 500 {
		return fmt.Sprintf("search after ingestion: %d %v %s", st, err, clip(b, 300))
	}
	// Detach it again, so the store stays small.
	req("DELETE", "/v1/vector_stores/"+vs+"/files/"+f.ID, "")
	return ""
}

// sendWS sends body as one text frame and reads until the response ends, an error
// message comes, or the server closes the connection.
func (fr *fuzzRunner) sendWS(ctx context.Context, body []byte) fuzzOutcome {
	conn, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(fr.srv.URL, "http")+"/v1/responses", nil)
	if err != nil {
		st := 0
		if resp != nil {
			st = resp.StatusCode
		}
		return fuzzOutcome{status: st, fail: "dial: " + err.Error()}
	}
	defer conn.CloseNow()
	conn.SetReadLimit(-1)
	if err := conn.Write(ctx, websocket.MessageText, body); err != nil {
		return fuzzOutcome{status: 101} // closed before reading it all: a frame over the limit
	}
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return fuzzOutcome{status: 101, fail: fmt.Sprintf("no end of the response in %s", fuzzRouteCaseTime), timedOut: true}
			}
			if st := websocket.CloseStatus(err); st == websocket.StatusInternalError {
				return fuzzOutcome{status: 101, fail: "closed with an internal error: " + err.Error()}
			}
			return fuzzOutcome{status: 101}
		}
		var ev struct {
			Type   string
			Status int
		}
		json.Unmarshal(data, &ev)
		switch ev.Type {
		case "error":
			if ev.Status >= 500 || ev.Status == 0 {
				return fuzzOutcome{status: cmpInt(ev.Status, 500), fail: "error message: " + clip(data, 400)}
			}
			return fuzzOutcome{status: ev.Status}
		case "response.failed":
			return fuzzOutcome{status: 101, fail: "response.failed: " + clip(data, 400)}
		case "response.completed", "response.incomplete":
			return fuzzOutcome{status: 200}
		}
	}
}

func cmpInt(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

// loadCorpus reads the committed corpus.
func loadCorpus(t *testing.T) []fuzzCase {
	b, err := os.ReadFile(filepath.Join("testdata", "fuzzroutes", "corpus.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []fuzzCase
	for i, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var c fuzzCase
		if err := json.Unmarshal(line, &c); err != nil {
			t.Fatalf("corpus line %d: %v", i+1, err)
		}
		cases = append(cases, c)
	}
	return cases
}

// memSnapshot is hearth's heap in use (this process, after a GC) and the runners' RSS.
type memSnapshot struct {
	heap, runners uint64
	pids          []int
}

func takeMem() memSnapshot {
	runtime.GC()
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	s := memSnapshot{heap: m.HeapInuse, pids: testenv.RunnerPIDs(true)}
	for _, pid := range s.pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				s.runners += kb << 10
			}
		}
	}
	return s
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }

// fuzzHeapSlack is how far hearth's heap may stay above its baseline after the run:
// the budgets of its caches (hot chains, items, contexts), which a run may fill and
// which hold until evicted, plus a quarter.
const fuzzHeapSlack = (64 + 32 + 64) << 20

// TestFuzzRoutesE2E: see the comment at the top of this file.
func TestFuzzRoutesE2E(t *testing.T) {
	testenv.SkipIfExternal(t, "the runner crash count reads the embedded runtime's log")
	// hearth's own log (a line per request) is left out; the runtime's is read below.
	srv, _, _ := fileSearchHearth(t, server.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	testenv.Embedder(t)
	// Count runner deaths from the runtime's log, from now on.
	crashes, last := new(atomic.Int64), new(atomic.Value)
	prev := slog.Default()
	slog.SetDefault(slog.New(runnerCrashTap{inner: prev.Handler(), n: crashes, last: last}))
	t.Cleanup(func() { slog.SetDefault(prev) })

	fx := &fuzzFixtures{t: t, srv: srv, ids: map[string]string{}}
	fx.make("")
	waitVectorStore(t, func() hearth.VectorStore {
		var v hearth.VectorStore
		convDo(t, srv, "", "GET", "/v1/vector_stores/"+fx.ids["@vs@"], "", &v)
		return v
	})
	fr := &fuzzRunner{t: t, srv: srv, fx: fx, crashes: crashes, last: last,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}},
		sent:   map[string]int{}, classes: map[string]map[string]int{}, recEvery: max(1, envInt("HEARTH_FUZZ_ROUTES_RECORD_EVERY", 1))}
	if path := os.Getenv("HEARTH_FUZZ_ROUTES_RECORD"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		fr.record = f
	}
	start := time.Now()

	// The seeds first: they warm every model and path, then the baseline is taken.
	seeds := fuzzSeeds()
	for _, c := range seeds {
		fr.run(c)
	}
	base := takeMem()
	t.Logf("baseline: heap %.1f MiB, runners %.1f MiB (pids %v)", mib(base.heap), mib(base.runners), base.pids)

	maxBody := int64(server.DefaultMaxBodyBytes)
	for _, c := range loadCorpus(t) {
		if c.Gen != "" {
			g, err := expandGen(c.Gen, maxBody)
			if err != nil {
				t.Error(err)
				continue
			}
			g.Found = c.Found
			c = g
		}
		fr.run(c)
	}
	// The full run: the special sets, then the mutated bodies, until
	// HEARTH_FUZZ_ROUTES_FOR has passed, if it is set.
	mutated := envInt("HEARTH_FUZZ_ROUTES", 0)
	if d := envDuration("HEARTH_FUZZ_ROUTES_FOR", 0); d > 0 {
		fr.stopAt = start.Add(d)
	}
	stopped := func() bool { return !fr.stopAt.IsZero() && time.Now().After(fr.stopAt) }
	sentMutated := 0
	if mutated > 0 {
		// The special sets interleaved with the mutated bodies, so that a run cut by
		// HEARTH_FUZZ_ROUTES_FOR has sent some of both.
		var gens []string
		if os.Getenv("HEARTH_FUZZ_ROUTES_SPECIAL") != "0" {
			gens = specialSets()
		}
		every := max(1, mutated/max(1, len(gens)))
		special := func() {
			c, err := expandGen(gens[0], maxBody)
			if err != nil {
				t.Fatal(err)
			}
			gens = gens[1:]
			fr.run(c)
		}
		m := newMutator(int64(envInt("HEARTH_FUZZ_ROUTES_SEED", 1)))
		for i := range mutated {
			if stopped() {
				t.Logf("HEARTH_FUZZ_ROUTES_FOR has passed: %d of %d mutated bodies sent, %d special cases left", i, mutated, len(gens))
				break
			}
			fr.run(m.mutate(seeds[m.r.Intn(len(seeds))]))
			sentMutated++
			if i%every == 0 && len(gens) > 0 {
				special()
			}
			if (i+1)%250 == 0 {
				t.Logf("%d mutated bodies sent, %d failures, %s", i+1, len(fr.failures), time.Since(start).Round(time.Second))
			}
		}
		for len(gens) > 0 && !stopped() {
			special()
		}
	}

	// Let background work end (ingestion, background responses) before the memory is
	// read again.
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		var page struct{ Data []hearth.VectorStore }
		_, _, b := call(t, nil, "GET", srv.URL+"/v1/vector_stores?limit=100", "", "")
		json.Unmarshal(b, &page)
		busy := false
		for _, v := range page.Data {
			busy = busy || v.FileCounts.InProgress > 0
		}
		if !busy {
			break
		}
		time.Sleep(time.Second)
	}
	fr.client.CloseIdleConnections()
	after := takeMem()
	elapsed := time.Since(start)

	// The summary: bodies per route and what they got, then every failure.
	var routes []string
	for r := range fr.sent {
		routes = append(routes, r)
	}
	sort.Strings(routes)
	var sum strings.Builder
	fmt.Fprintf(&sum, "route fuzz: %d cases in %s (%d mutated), %d runner deaths logged, %d times runners ended after a case hung\n",
		fr.n, elapsed.Round(time.Second), sentMutated, crashes.Load(), fr.killed)
	for _, r := range routes {
		var cl []string
		for k, v := range fr.classes[r] {
			cl = append(cl, fmt.Sprintf("%s=%d", k, v))
		}
		sort.Strings(cl)
		fmt.Fprintf(&sum, "  %-28s %5d  %s\n", r, fr.sent[r], strings.Join(cl, " "))
	}
	fmt.Fprintf(&sum, "memory: heap %.1f -> %.1f MiB, runners' RSS %.1f -> %.1f MiB (pids %v -> %v)\n",
		mib(base.heap), mib(after.heap), mib(base.runners), mib(after.runners), base.pids, after.pids)
	fmt.Fprintf(&sum, "failures: %d\n", len(fr.failures))
	for _, f := range fr.failures {
		fmt.Fprintf(&sum, "  %s %s %s", f.c.Method, f.c.Path, f.c.label())
		if f.c.Found != "" {
			fmt.Fprintf(&sum, " [found before: %s]", f.c.Found)
		}
		fmt.Fprintf(&sum, ": %s\n    body %s\n", f.outcome.fail, clip(f.c.bytesOf(), 200))
		if f.min != "" {
			fmt.Fprintf(&sum, "    minimized %s\n", clip([]byte(f.min), 300))
		}
	}
	t.Log(sum.String())
	if out := os.Getenv("HEARTH_FUZZ_ROUTES_OUT"); out != "" {
		os.WriteFile(out, []byte(sum.String()), 0o644)
	}

	if after.heap > base.heap+base.heap/4+fuzzHeapSlack {
		t.Errorf("hearth's heap did not come back: %.1f MiB after, %.1f MiB before", mib(after.heap), mib(base.heap))
	}
	if after.runners > base.runners+base.runners/2+256<<20 {
		t.Errorf("the runners' memory did not come back: %.1f MiB after, %.1f MiB before", mib(after.runners), mib(base.runners))
	}
	if len(fr.failures) > 0 {
		t.Errorf("%d of %d cases failed (see the summary above)", len(fr.failures), fr.n)
	}
}
