package engine

import "encoding/json"

// What the external tests (package engine_test) use: they run hosted tool kinds of
// other packages (MCP's) through the engine, which the engine's own tests cannot
// import.

// NewFakeRuntime is the fake runtime of the tools script model (qwenShow) whose model
// writes what write returns for the transcript so far.
func NewFakeRuntime(write func(transcript string, format json.RawMessage) []string) *fakeRuntime {
	return &fakeRuntime{show: qwenShow(), write: write}
}

// Prompts are the prompts of the generations the runtime ran.
func (f *fakeRuntime) Prompts() []string {
	var out []string
	for _, r := range f.reqs {
		out = append(out, r.Prompt)
	}
	return out
}

// Script is script.
func Script(tokens ...string) func(string) []string { return script(tokens...) }

var TimeZero = timeZero
