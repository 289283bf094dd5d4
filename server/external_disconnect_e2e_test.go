package server_test

import (
	"bufio"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"hearth"
	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
)

// TestExternalDisconnectsE2E: clients that leave hearth at random points of streaming
// responses, free and with tool choice enforced, do not wedge an external Ollama
// (ollama/ollama#17131: a stream its client leaves at the wrong instant blocks the
// model's slot for minutes). After 50 of them a request must complete within 30 s:
// far below a wedged slot's minutes, and far above a short request on a loaded machine
// (2 s, the bound before, failed under a CI run beside four builds).
func TestExternalDisconnectsE2E(t *testing.T) {
	if !testenv.External() {
		t.Skip("needs the external runtime: " + testenv.RuntimeEnv + "=external")
	}
	srv := newHearthWithDB(t)
	enforced := `"input":"weather and time in Paris?","temperature":0,` + toolsJSON
	bodies := []string{
		reqBody(scriptmodel.LongModel, true, `"input":"a long story"`),
		reqBody(scriptmodel.ToolsModel, true, enforced+`,"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"get_time"}]}`),
		reqBody(scriptmodel.ToolsModel, true, enforced),
		reqBody(scriptmodel.ToolsModel, true, enforced+`,"tool_choice":{"type":"function","name":"get_time"}`),
		reqBody(scriptmodel.PlainModel, true, `"input":"hi",`+toolsJSON+`,"tool_choice":"required"`),
	}
	// Warm every model, so the first disconnects fall inside generation, not loading.
	for _, b := range bodies {
		createSSE(t, srv, b)
	}
	rnd := rand.New(rand.NewPCG(17131, 15))
	for i := range 50 {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/responses", strings.NewReader(bodies[i%len(bodies)]))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		// Leave after a random number of events (the deltas come token by token),
		// sometimes after a random pause instead.
		sc := bufio.NewScanner(resp.Body)
		for n := rnd.IntN(40); n > 0 && sc.Scan(); {
			if strings.HasPrefix(sc.Text(), "event:") {
				n--
			}
		}
		if rnd.IntN(4) == 0 {
			time.Sleep(time.Duration(rnd.IntN(20)) * time.Millisecond)
		}
		cancel()
		resp.Body.Close()
	}
	// Every model the disconnects used answers, not after a wedged slot's minutes: a
	// short request (16 tokens, so that the bound measures waiting for a slot, not
	// decoding on a busy CPU).
	for _, model := range []string{scriptmodel.LongModel, scriptmodel.ToolsModel, scriptmodel.PlainModel} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		start := time.Now()
		req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/responses",
			strings.NewReader(reqBody(model, false, `"input":"hi","max_output_tokens":16`)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			t.Fatalf("%s: a request after 50 disconnects did not complete within 30 s: %v", model, err)
		}
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: a request after 50 disconnects: status %d, %v", model, resp.StatusCode, err)
		}
		t.Logf("%s: a request after 50 disconnects took %v", model, time.Since(start).Round(time.Millisecond))
	}
	for _, b := range bodies {
		if _, r := createSSE(t, srv, b); r.Status != hearth.StatusCompleted {
			t.Errorf("after the disconnects: status %s for %s", r.Status, b)
		}
	}
}
