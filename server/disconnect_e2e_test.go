package server_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"

	"hearth"
	"hearth/engine"
	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
)

// TestClientDisconnectE2E: a client that goes away mid-stream stops generation, and the
// stored response says where it stopped instead of staying in progress.
func TestClientDisconnectE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	m, long := testenv.BenchModel(t, scriptmodel.LongModel)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/responses",
		strings.NewReader(reqBody(long, true, `"input":"a long story"`)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var id string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if id == "" && strings.Contains(line, `"type":"response.created"`) {
			i := strings.Index(line, `"id":"resp_`)
			id = line[i+6 : i+6+len("resp_")+32]
		}
		if strings.Contains(line, "response.output_text.delta") {
			break
		}
	}
	cancel() // the client leaves after the first text delta
	resp.Body.Close()
	if id == "" {
		t.Fatal("no response id seen before the first delta")
	}
	final := pollUntilDone(t, srv, id)
	if final.Status != hearth.StatusIncomplete || final.IncompleteDetails == nil ||
		final.IncompleteDetails.Reason != engine.IncompleteClientDisconnected {
		t.Fatalf("stored response after disconnect: status %s details %+v error %+v", final.Status, final.IncompleteDetails, final.Error)
	}
	if n := len(final.Output); n != 1 || final.Output[0].Status != hearth.StatusIncomplete {
		t.Errorf("stored output %+v, want one incomplete message", final.Output)
	}
	full := m.Text(scriptmodel.EntryAssistant)
	if got := final.Output[0].Text(hearth.PartOutputText); got == full || !strings.HasPrefix(full, got) {
		t.Errorf("stored text %q should be a strict prefix of the script", got)
	}
}
