package server_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"hearth"
	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
)

// TestTokenizerRunsE2E: long runs of one punctuation character (what crashed the
// model runner's pre-tokenizer, std::regex recursing once per character) through every
// field that reaches the prompt are a completed response or a 400 naming the field,
// never a 500 or a dead runner; a conversation that holds such a run answers its next
// turn; and a request that meets a runner that died is retried on a new one.
func TestTokenizerRunsE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	m := scriptmodel.PlainModel
	plain := testenv.Model(t, m)
	want := plain.Text(scriptmodel.EntryAssistant)
	str := func(s string) string { b, _ := json.Marshal(s); return string(b) }

	// ok posts body and accepts a completed response with the script's text, or a 400
	// whose error names param (a prefix of it).
	ok := func(label, body, param string) {
		t.Helper()
		code, _, b := call(t, nil, "POST", srv.URL+"/v1/responses", "", body)
		switch code {
		case http.StatusOK:
			var r hearth.Response
			if err := json.Unmarshal(b, &r); err != nil || r.Status != hearth.StatusCompleted || scriptText(&r) != want {
				t.Errorf("%s: 200 but not the completed script: %.300s", label, b)
			}
		case http.StatusBadRequest:
			_, got := errCode(b)
			if !strings.HasPrefix(got, param) {
				t.Errorf("%s: 400 naming %q, want %q: %.300s", label, got, param, b)
			}
		default:
			t.Errorf("%s: %d %.300s", label, code, b)
		}
	}
	fields := map[string]func(run string) (body, param string){
		"instructions": func(run string) (string, string) {
			return `{"model":"` + m + `","input":"hi","instructions":` + str(run) + `}`, "instructions"
		},
		"input": func(run string) (string, string) {
			return `{"model":"` + m + `","input":` + str(run) + `}`, "input"
		},
		"tool description": func(run string) (string, string) {
			return `{"model":"` + m + `","input":"hi","tools":[{"type":"function","name":"f","description":` + str(run) +
				`,"parameters":{"type":"object","properties":{}}}]}`, "tools[0].description"
		},
		"input_file file_data": func(run string) (string, string) {
			data := "data:text/plain;base64," + base64.StdEncoding.EncodeToString([]byte(run))
			return `{"model":"` + m + `","input":[{"role":"user","content":[{"type":"input_text","text":"hi"},` +
				`{"type":"input_file","filename":"run.txt","file_data":"` + data + `"}]}]}`, "input[0].content[1]"
		},
	}
	chars := []string{`"`, "{", "<", "|", "~", "#", "%", `\`}
	sizes := []int{30_000, 300_000}
	for _, c := range chars {
		for _, n := range sizes {
			run := strings.Repeat(c, n)
			for name, body := range fields {
				b, param := body(run)
				ok(fmt.Sprintf("%d of %q in %s", n, c, name), b, param)
			}
		}
	}
	// 3 MB of text cannot fit a window of 4096 tokens: refused, and cheaply (the time
	// is logged, not asserted).
	start := time.Now()
	ok("3 MB of words", `{"model":"`+m+`","input":`+str(strings.Repeat("lorem ipsum ", 3<<20/12))+`}`, "input")
	t.Logf("3 MB of words answered in %v", time.Since(start))

	// A run the window holds is tokenized by the runner and answered.
	ok("a run that fits", `{"model":"`+m+`","input":"hi","instructions":`+str(strings.Repeat(`"`, 3000))+`}`, "instructions")

	// A conversation that holds a run: the turn that brings it is refused or answered;
	// one whose stored item holds it (added as an item, not through a response) is
	// refused as too long, or with truncation "auto" answered without that turn.
	var conv struct{ ID string }
	convDo(t, srv, "", "POST", "/v1/conversations", "", &conv)
	ok("a conversation turn", `{"model":"`+m+`","conversation":"`+conv.ID+`","input":`+str(strings.Repeat(`"`, 60_000))+`}`, "input")
	convDo(t, srv, "", "POST", "/v1/conversations/"+conv.ID+"/items",
		`{"items":[{"type":"message","role":"user","content":`+str(strings.Repeat(`"`, 60_000))+`}]}`, nil)
	ok("the next turn", `{"model":"`+m+`","conversation":"`+conv.ID+`","input":"hi"}`, "input")
	code, _, b := call(t, nil, "POST", srv.URL+"/v1/responses", "", `{"model":"`+m+`","conversation":"`+conv.ID+`","input":"hi","truncation":"auto"}`)
	if code != http.StatusOK {
		t.Errorf("the next turn, truncation auto: %d %.300s", code, b)
	}

	// Another request on the same model completes while runs are sent.
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				ok("concurrent run", `{"model":"`+m+`","input":`+str(strings.Repeat(`"`, 60_000))+`}`, "input")
				return
			}
			ok("concurrent request", reqBody(m, false, `"input":"hi"`), "-")
		}()
	}
	wg.Wait()

	if !testenv.External() {
		// The runners hearth starts have 1 GiB thread stacks: a prompt of 60,000 `"`
		// sent raw through the /api passthrough (no token bound there) is tokenized
		// without killing the runner (an 8 MiB stack overflows at about 27,000).
		code, _, b := call(t, nil, "POST", srv.URL+"/api/generate", "",
			`{"model":"`+m+`","raw":true,"stream":false,"prompt":`+str(strings.Repeat(`"`, 60_000))+`,"options":{"num_predict":1}}`)
		if code >= 500 {
			t.Errorf("a raw prompt of 60,000 quotes: %d %.300s", code, b)
		}
		for _, pid := range testenv.RunnerPIDs(true) {
			limits, _ := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
			for _, line := range strings.Split(string(limits), "\n") {
				if f := strings.Fields(line); len(f) > 4 && f[0] == "Max" && f[1] == "stack" && f[3] != "1073741824" {
					t.Errorf("runner %d: %s", pid, line)
				}
			}
		}
	}

	// A runner that died (killed here, as a crash would) costs a request that had
	// nothing from it yet nothing: it is retried on a new runner.
	createJSON(t, srv, reqBody(m, false, `"input":"hi"`))
	pids := testenv.RunnerPIDs(true)
	if len(pids) == 0 {
		t.Fatal("no model runner to kill")
	}
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	for _, pid := range pids {
		for testenv.ProcessAlive(pid) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	r := createJSON(t, srv, reqBody(m, false, `"input":"hi"`))
	if r.Status != hearth.StatusCompleted || scriptText(r) != want {
		t.Errorf("after the runner died: %s %+v", r.Status, r.Error)
	}
}

// scriptText is the text of r's messages.
func scriptText(r *hearth.Response) string {
	var sb strings.Builder
	for _, it := range r.Output {
		if it.Type == "message" {
			for _, p := range it.Content {
				sb.WriteString(p.Text)
			}
		}
	}
	return sb.String()
}
