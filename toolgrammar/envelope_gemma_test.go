package toolgrammar

import "testing"

// An invalid escape in a JSON-quoted string fails the call with the same argument
// deltas before it however the output was cut (found by FuzzParser).
func TestGemmaInvalidEscapeChunking(t *testing.T) {
	reg := testRegistry(t)
	var fm *Format
	for _, f := range reg.Formats() {
		if f.ID == "gemma4" {
			fm = f
		}
	}
	in := "<|tool_call>0{\"\":\"00\\00"
	opts := Options{Tools: testTools}
	want := normalize(parseChunks(fm, opts, []string{in}))
	for k := 0; k <= len(in); k++ {
		compareEvents(t, "split", want, normalize(parseChunks(fm, opts, splitAt(in, k))))
	}
	var bytewise []string
	for i := 0; i < len(in); i++ {
		bytewise = append(bytewise, in[i:i+1])
	}
	compareEvents(t, "bytes", want, normalize(parseChunks(fm, opts, bytewise)))
}
