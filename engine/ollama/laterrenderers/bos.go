package laterrenderers

// moduleLeadingBOS is Ollama v0.32.15's LeadingBOS for the renderers the module (v0.24.0)
// has too: v0.24.0's renderers write the same text first but have no LeadingBOS method
// (the interface gained it later). Renderers not listed write none.
var moduleLeadingBOS = map[string]string{
	"cogito":        "<｜begin▁of▁sentence｜>",
	"deepseek3.1":   "<｜begin▁of▁sentence｜>",
	"functiongemma": "<bos>",
	"gemma4":        "<bos>",
	"gemma4-small":  "<bos>",
	"gemma4-large":  "<bos>",
	"laguna":        lagunaBOS,
	"lfm2":          "<|startoftext|>",
	"lfm2-thinking": "<|startoftext|>",
}
