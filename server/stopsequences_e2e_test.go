package server_test

import (
	"strings"
	"testing"

	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
)

// TestMessagesStopSequencesE2E: stop_sequences end the message where the model writes
// one of them, without it, with stop_reason "stop_sequence" and stop_sequence naming
// it, in JSON and in the stream's message_delta; one the model never writes leaves
// the message as it was (end_turn). hearth watches the output for them itself, so a
// stop string that spans two of the runtime's chunks (two tokens of the script) is
// found too.
func TestMessagesStopSequencesE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	plain := testenv.Model(t, scriptmodel.PlainModel)
	a := scriptmodel.EntryAssistant
	pieces := plain.Pieces(a)
	text := plain.Text(a)
	// throughMatch is how many tokens the model wrote when stop's first occurrence
	// ended: the runtime streams one chunk per token of the script, and hearth
	// leaves the stream at the chunk that completes the stop string, counting the
	// chunks it read, as the runtime counts a generation its own stop string ends
	// (the stop's tokens included).
	throughMatch := func(stop string) int {
		end := strings.Index(text, stop) + len(stop)
		n, at := 0, 0
		for at < end {
			at += len(pieces[n])
			n++
		}
		return n
	}
	const hi = `"messages":[{"role":"user","content":"hi"}]`
	for _, tc := range []struct {
		name  string
		stops string
		stop  string // the one that ends the message; "" for none
	}{
		// Inside one token (" script").
		{"in one token", `["script"]`, "script"},
		// " hearth." then " This": hearth holds back "hearth." until " This" tells.
		{"across two tokens", `["hearth. This"]`, "hearth. This"},
		// " from" begins "from a" but is followed by " hearth.": released; the
		// stop matches later, in " from a".
		{"first of several", `["model.","from a"]`, "from a"},
		{"never written", `["nothing here"]`, ""},
	} {
		body := msgBody(scriptmodel.PlainModel, hi+`,"stop_sequences":`+tc.stops)
		m := createMessage(t, srv, body)
		want, reason, tokens := text, "end_turn", plain.EvalCount(a)
		if tc.stop != "" {
			// Up to the stop, and without the space before it: hearth ends a
			// message's text without trailing whitespace, as on /v1/responses.
			want = strings.TrimRight(text[:strings.Index(text, tc.stop)], " ")
			reason, tokens = "stop_sequence", throughMatch(tc.stop)
		}
		got := ""
		if len(m.Content) == 1 && m.Content[0]["type"] == "text" {
			got, _ = m.Content[0]["text"].(string)
		}
		if got != want || len(m.Content) != 1 {
			t.Errorf("%s: content %v, want one text block %q", tc.name, m.Content, want)
		}
		if m.StopReason != reason || (tc.stop == "" && m.StopSequence != nil) || (tc.stop != "" && deref(m.StopSequence) != tc.stop) {
			t.Errorf("%s: stop_reason %q stop_sequence %v, want %q %q", tc.name, m.StopReason, m.StopSequence, reason, tc.stop)
		}
		if m.Usage.OutputTokens != tokens {
			t.Errorf("%s: output_tokens %d, want %d", tc.name, m.Usage.OutputTokens, tokens)
		}
		// The prompt is counted as count_tokens counts it, stopped or not.
		if n := countTokens(t, srv, body); n != m.promptTokens() {
			t.Errorf("%s: count_tokens %d, the message's prompt %d", tc.name, n, m.promptTokens())
		}

		// Streamed: the same text in deltas, and the stop in message_delta.
		events := streamMessage(t, srv, msgBody(scriptmodel.PlainModel, `"stream":true,`+hi+`,"stop_sequences":`+tc.stops))
		if got, want := shape(events), "message_start content_block_start(text) text_delta content_block_stop message_delta message_stop"; got != want {
			t.Fatalf("%s stream:\n got %s\nwant %s", tc.name, got, want)
		}
		var streamed strings.Builder
		for _, e := range events {
			if e.name == "content_block_delta" {
				streamed.WriteString(e.data["delta"].(map[string]any)["text"].(string))
			}
		}
		md := events[len(events)-2].data
		delta := md["delta"].(map[string]any)
		var seq any = tc.stop
		if tc.stop == "" {
			seq = nil
		}
		if streamed.String() != want || delta["stop_reason"] != reason || delta["stop_sequence"] != seq ||
			int(md["usage"].(map[string]any)["output_tokens"].(float64)) != tokens {
			t.Errorf("%s stream: text %q, message_delta %v; want %q %s %v %d tokens", tc.name, streamed.String(), md, want, reason, seq, tokens)
		}
	}
}
