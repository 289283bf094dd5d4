package testenv_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestExtraServer starts a second `ollama serve` on the shared models, generates on it,
// and kills it: the process and its model runner are gone, and the shared runtime still
// answers.
func TestExtraServer(t *testing.T) {
	if !testenv.External() {
		// make test stays as it was: building the ollama CLI fetches the modules
		// only it uses. make test-external runs this.
		t.Skip("builds an ollama serve process: " + testenv.RuntimeEnv + "=external")
	}
	shared := testenv.Runtime(t)
	m := testenv.Model(t, scriptmodel.PlainModel)
	s := testenv.StartServer(t)
	if s.Runtime.URL.String() == shared.URL.String() {
		t.Fatalf("the extra server shares the shared runtime's address %s", s.Runtime.URL)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out strings.Builder
	stream := false
	err := s.Runtime.Client.Generate(ctx, &api.GenerateRequest{Model: scriptmodel.PlainModel, Prompt: "<|user|>hi" + scriptmodel.EntryAssistant, Raw: true, Stream: &stream},
		func(r api.GenerateResponse) error { out.WriteString(r.Response); return nil })
	if err != nil {
		t.Fatalf("generate on the extra server: %v\n%s", err, s.Log())
	}
	if want := m.Text(scriptmodel.EntryAssistant); out.String() != want {
		t.Fatalf("the extra server generated %q, want %q", out.String(), want)
	}
	pid := s.PID()
	s.Kill()
	if testenv.ProcessAlive(pid) {
		t.Fatalf("ollama serve %d still runs after Kill", pid)
	}
	if err := s.Runtime.Ready(ctx); err == nil {
		t.Fatal("the killed server still answers")
	}
	if err := shared.Ready(ctx); err != nil {
		t.Fatalf("the shared runtime stopped answering: %v", err)
	}
}
