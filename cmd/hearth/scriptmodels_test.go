package main

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"hearth/scriptmodel"
)

// TestScriptModelsOffline is what a new user without network does: write the script
// models into an empty models directory with `hearth script-models`, serve that
// directory, and get a model's exact answer from /v1/responses.
func TestScriptModelsOffline(t *testing.T) {
	dir := t.TempDir()
	models := filepath.Join(dir, "models")
	cmd := exec.Command(os.Args[0], "script-models", "--models", models)
	cmd.Env = slicesWithout(append(os.Environ(), runMainEnv+"=1"), "OLLAMA_HOST=")
	cmd.Env = slicesWithout(cmd.Env, "OLLAMA_MODELS=")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hearth script-models: %v\n%s", err, out)
	}
	names := []string{scriptmodel.EmbedModel}
	for name := range scriptmodel.Catalog() {
		names = append(names, name)
	}
	for _, name := range names {
		if !strings.Contains(string(out), name) {
			t.Errorf("hearth script-models did not list %s:\n%s", name, out)
		}
	}
	if _, err := os.Stat(filepath.Join(models, "manifests")); err != nil {
		t.Fatalf("no manifests written into --models: %v", err)
	}

	p := startHearth(t, dir)
	resp, err := http.Post(p.base+"/v1/responses", "application/json",
		strings.NewReader(`{"model":"hearth-script-plain","input":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct {
		Status string `json:"status"`
		Output []struct {
			Type    string `json:"type"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
		Usage struct {
			OutputTokens int `json:"output_tokens"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /v1/responses: %s, %v", resp.Status, err)
	}
	m, err := scriptmodel.Build(scriptmodel.Catalog()[scriptmodel.PlainModel])
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != "completed" || len(got.Output) != 1 || got.Output[0].Type != "message" ||
		len(got.Output[0].Content) != 1 || got.Output[0].Content[0].Text != m.Text(scriptmodel.EntryAssistant) {
		t.Errorf("response = %+v, want the script's text %q", got, m.Text(scriptmodel.EntryAssistant))
	}
	if got.Usage.OutputTokens != m.EvalCount(scriptmodel.EntryAssistant) {
		t.Errorf("output_tokens = %d, want %d", got.Usage.OutputTokens, m.EvalCount(scriptmodel.EntryAssistant))
	}
}
