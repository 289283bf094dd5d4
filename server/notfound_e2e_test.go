package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
)

// TestModelNotFoundSaysWhatToDoE2E: a model name with a typo answers model_not_found
// naming the model hearth has one edit away, where it looked (the runtime, not this
// machine's paths) and the command that gets the model; the console's live view then
// shows no slot row for the name that names no model, and still shows the real one's.
func TestModelNotFoundSaysWhatToDoE2E(t *testing.T) {
	srv := newHearth(t)
	testenv.Model(t, scriptmodel.PlainModel)
	const typo = "hearth-script-plian"

	code, _, b := call(t, nil, "POST", srv.URL+"/v1/responses", "", `{"model":"hearth-script-plain","input":"hi"}`)
	if code != http.StatusOK {
		t.Fatalf("the real model: %d %s", code, b)
	}
	code, _, b = call(t, nil, "POST", srv.URL+"/v1/responses", "", `{"model":"`+typo+`","input":"hi"}`)
	var e struct {
		Error struct{ Message, Type, Param, Code string }
	}
	if err := json.Unmarshal(b, &e); err != nil || code != http.StatusNotFound {
		t.Fatalf("%d %s", code, b)
	}
	want := "The model '" + typo + "' does not exist or is not available. Did you mean '" + scriptmodel.PlainModel + "'?" +
		lookedFor(t, typo) + " To serve it under that name, alias it to a model hearth has: " +
		"hearth serve --model-alias '" + typo + "=MODEL' (or a pattern, 'hearth-*=MODEL'); see docs/clients.md."
	if e.Error.Message != want || e.Error.Code != "model_not_found" || e.Error.Param != "model" || e.Error.Type != "not_found" {
		t.Errorf("error = %+v\nwant message %q, code model_not_found, param model, type not_found", e.Error, want)
	}

	resp, err := http.Get(srv.URL + "/console/live/fragment")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("live fragment: %d %s", resp.StatusCode, page)
	}
	if strings.Contains(string(page), typo) {
		t.Errorf("the live view shows the name of no model:\n%s", page)
	}
	if !strings.Contains(string(page), `<tr class="lane"><td class="cut" title="hearth-script-plain">hearth-script-plain</td>`) {
		t.Errorf("the live view does not show the real model's slots:\n%s", page)
	}
}

// lookedFor is what a model_not_found of name says of where hearth looked and how to
// get the model, over the test's one runtime.
func lookedFor(t *testing.T, name string) string {
	if testenv.External() {
		label := testenv.Runtime(t).Label()
		return " hearth looked in the Ollama runtime at " + label + ". To get it: ollama pull " + name + " on the host of " + label + " (or hearth pull " + name + ")."
	}
	return " hearth looked in the embedded runtime's models directory. To get it: hearth pull " + name + "."
}
