package server_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"hearth"
	"hearth/cmd/hearth/wire"
	"hearth/engine"
	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
	"hearth/storage/sqlite"
)

// TestChainContextE2E: three turns chained with previous_response_id render exactly the
// prompt of the same conversation sent whole, and report the same input tokens.
func TestChainContextE2E(t *testing.T) {
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rt := testenv.Runtime(t)
	srv := httptest.NewServer(wire.New(wire.Config{Runtime: rt, Database: db}))
	defer srv.Close()

	model := scriptmodel.PlainModel
	var turns []*hearth.Response
	for _, say := range []string{"one", "two", "three"} {
		extra := `"input":"` + say + `","instructions":"Be brief."`
		if len(turns) > 0 {
			extra += `,"previous_response_id":"` + turns[len(turns)-1].ID + `"`
		}
		turns = append(turns, createJSON(t, srv, reqBody(model, false, extra)))
	}
	third := turns[2]

	// The whole conversation, sent at once: what the chain must amount to.
	reply := testenv.Model(t, model).Text(scriptmodel.EntryAssistant)
	assistant := `{"type":"message","role":"assistant","content":[{"type":"output_text","text":` + jsonString(reply) + `}]}`
	whole := `"instructions":"Be brief.","input":[{"role":"user","content":"one"},` + assistant +
		`,{"role":"user","content":"two"},` + assistant + `,{"role":"user","content":"three"}]`
	explicit := createJSON(t, srv, reqBody(model, false, whole))
	if third.Usage.InputTokens != explicit.Usage.InputTokens {
		t.Errorf("chained third turn has %d input tokens, the whole conversation %d", third.Usage.InputTokens, explicit.Usage.InputTokens)
	}

	// The rendered prompts themselves: the chain as storage returns it, and the whole.
	eng := engine.New(rt.Seam(), engine.DefaultFormats(), nil)
	history := storedHistory(t, db, turns[1].ID)
	chained, _, err := hearth.DecodeCreateRequest([]byte(reqBody(model, false, `"input":"three","instructions":"Be brief."`)))
	if err != nil {
		t.Fatal(err)
	}
	whole1, _, err := hearth.DecodeCreateRequest([]byte(reqBody(model, false, whole)))
	if err != nil {
		t.Fatal(err)
	}
	j1, err := eng.Prepare(context.Background(), chained, history, engine.Inputs{})
	if err != nil {
		t.Fatal(err)
	}
	j2, err := eng.Prepare(context.Background(), whole1, nil, engine.Inputs{})
	if err != nil {
		t.Fatal(err)
	}
	if j1.Prompt != j2.Prompt {
		t.Errorf("chained prompt differs from the whole conversation's:\n%q\n%q", j1.Prompt, j2.Prompt)
	}
	if strings.Count(j1.Prompt, "Be brief.") != 1 {
		t.Errorf("instructions should appear once (not inherited from earlier turns): %q", j1.Prompt)
	}
	for _, say := range []string{"one", "two", "three"} {
		if !strings.Contains(j1.Prompt, "<|user|>"+say) {
			t.Errorf("prompt lacks user turn %q: %q", say, j1.Prompt)
		}
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
