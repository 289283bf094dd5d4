package laterrenderers

// moduleLeadingBOS is Ollama v0.32.15's LeadingBOS for the renderers the module (v0.24.0)
// has and this package does not override: v0.24.0's renderers write the same text first
// but have no LeadingBOS method (the interface gained it later). Renderers not listed
// here or in renderer.go write none.
var moduleLeadingBOS = map[string]string{
	"cogito":        "<｜begin▁of▁sentence｜>",
	"deepseek3.1":   "<｜begin▁of▁sentence｜>",
	"functiongemma": "<bos>",
}
