package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"hearth"
)

// fuzzEventTypes are the event types whose payload is free text the model or the client
// controls; the lifecycle events carry whole responses built by hearth.
var fuzzEventTypes = []string{
	hearth.EventOutputTextDelta, hearth.EventOutputTextDone, hearth.EventReasoningDelta,
	hearth.EventReasoningDone, hearth.EventRefusalDelta, hearth.EventRefusalDone,
	hearth.EventReasoningSummaryTextDelta, hearth.EventReasoningSummaryTextDone,
	hearth.EventFunctionCallArgumentsDelta, hearth.EventFunctionCallArgumentsDone,
	hearth.EventError,
	hearth.EventCustomToolCallInputDelta, hearth.EventCustomToolCallInputDone,
}

func fuzzEvent(kind uint8, seq int, itemID, text string) hearth.Event {
	e := hearth.Event{
		Type: fuzzEventTypes[int(kind)%len(fuzzEventTypes)], SequenceNumber: seq, ItemID: itemID,
		Delta: text, Text: text, Refusal: text, Arguments: text, Input: text,
	}
	if e.Type == hearth.EventError {
		e.Error = hearth.ServerError(text)
	}
	return e
}

// parseFrames splits an SSE body into frames the way a client does (a blank line ends a
// frame) and returns each frame's event and data lines.
func parseFrames(t *testing.T, body string) (frames [][2]string, done bool) {
	t.Helper()
	if !strings.HasSuffix(body, "\n\n") {
		t.Fatalf("body does not end with a blank line: %q", body)
	}
	for _, block := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		if block == "data: [DONE]" {
			if done {
				t.Fatalf("[DONE] twice")
			}
			done = true
			continue
		}
		if done {
			t.Fatalf("frame after [DONE]: %q", block)
		}
		lines := strings.Split(block, "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "event: ") || !strings.HasPrefix(lines[1], "data: ") {
			t.Fatalf("frame is not one event line and one data line: %q", block)
		}
		frames = append(frames, [2]string{strings.TrimPrefix(lines[0], "event: "), strings.TrimPrefix(lines[1], "data: ")})
	}
	return frames, done
}

// addFrameSeeds seeds a framing target (SSE or WebSocket) with texts that look like
// framing themselves (SSE fields, [DONE], keep-alives, event JSON), line breaks of every
// kind, control and invalid bytes: (event kind, sequence number, item id, two texts,
// OpenAI dialect).
func addFrameSeeds(f *testing.F) {
	f.Add(uint8(0), 1, "msg_1", "Hello", "world", false)
	f.Add(uint8(4), 7, "rs_1", "line\nbreak\r\n\n", "data: [DONE]\n\n", true)
	f.Add(uint8(8), 0, "fc_1", `{"city":"Paris"}`, "\x00\xff\u2028\u2029", false)
	f.Add(uint8(10), -3, "", "event: error\ndata: {}", ": keep-alive\n\n", false)
	f.Add(uint8(2), 2, "rs_2", `"type":"response.reasoning.delta"`, `{"type":"response.reasoning.delta"}`, true)
	f.Add(uint8(11), 3, "ctc_1", "*** Begin Patch\n+\"x\"", "\x1b[0m\t\\", true)
}

// FuzzSSEFrame: whatever text a model or client puts into an event, each event becomes
// exactly one frame (`event:` equal to the JSON's type, one `data:` line that parses back
// to the same text), and [DONE] comes last; in both dialects (OpenAI's renames types).
func FuzzSSEFrame(f *testing.F) {
	addFrameSeeds(f)
	f.Fuzz(func(t *testing.T, kind uint8, seq int, itemID, text1, text2 string, openAI bool) {
		rec := httptest.NewRecorder()
		d := dialectOpenResponses
		if openAI {
			d = dialectOpenAI
		}
		s := newSSEWriter(rec, 0, d)
		in := []hearth.Event{fuzzEvent(kind, seq, itemID, text1), fuzzEvent(kind+1, seq+1, text2, text2)}
		for _, e := range in {
			s.Event(e)
		}
		s.Done()
		frames, done := parseFrames(t, rec.Body.String())
		if !done || len(frames) != len(in) {
			t.Fatalf("%d frames, done %v; want %d and done", len(frames), done, len(in))
		}
		texts := []string{text1, text2}
		for i, fr := range frames {
			var got map[string]any
			dec := json.NewDecoder(strings.NewReader(fr[1]))
			dec.UseNumber()
			if err := dec.Decode(&got); err != nil {
				t.Fatalf("frame %d data is not JSON: %v: %q", i, err, fr[1])
			}
			want := in[i].Type
			if openAI {
				want = hearth.OpenAIEventType(want)
			}
			if got["type"] != fr[0] || fr[0] != want {
				t.Fatalf("frame %d: event %q, JSON type %v, want %q", i, fr[0], got["type"], want)
			}
			if n, _ := got["sequence_number"].(json.Number); n.String() != strconv.Itoa(in[i].SequenceNumber) {
				t.Fatalf("frame %d: sequence_number %v, want %d", i, got["sequence_number"], in[i].SequenceNumber)
			}
			if !utf8.ValidString(texts[i]) {
				continue // JSON carries invalid UTF-8 as U+FFFD; the frame is still whole
			}
			var payload any
			for _, k := range []string{"delta", "text", "refusal", "arguments", "input"} {
				if v, ok := got[k]; ok {
					payload = v
				}
			}
			if e, ok := got["error"].(map[string]any); ok {
				payload = e["message"]
			}
			if payload != texts[i] {
				t.Fatalf("frame %d carries %q, want %q", i, payload, texts[i])
			}
		}
	})
}

// discardWriter is an http.ResponseWriter that keeps nothing, so a benchmark measures
// framing rather than a growing buffer.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}
func (d *discardWriter) Flush()                      {}

// BenchmarkSSEFrame measures one text-delta frame: marshal, frame, write, flush. It is
// the per-token cost hearth adds to a stream.
func BenchmarkSSEFrame(b *testing.B) {
	s := newSSEWriter(&discardWriter{h: http.Header{}}, 0, dialectOpenResponses)
	e := hearth.Event{Type: hearth.EventOutputTextDelta, ItemID: "msg_" + strings.Repeat("0", 32), Delta: " token"}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		e.SequenceNumber = i
		s.Event(e)
	}
}

// BenchmarkSSEFrameLarge: a function_call_arguments.done of 4 KiB, the largest frame a
// typical tool call sends.
func BenchmarkSSEFrameLarge(b *testing.B) {
	s := newSSEWriter(&discardWriter{h: http.Header{}}, 0, dialectOpenResponses)
	args, _ := json.Marshal(map[string]string{"content": strings.Repeat("lorem ipsum \"quoted\"\n", 200)})
	e := hearth.Event{Type: hearth.EventFunctionCallArgumentsDone, ItemID: "fc_1", Arguments: string(args)}
	b.SetBytes(int64(len(args)))
	b.ReportAllocs()
	for b.Loop() {
		s.Event(e)
	}
}
