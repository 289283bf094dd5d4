package ollama

import (
	"math/rand/v2"
	"testing"

	"hearth/engine"
)

// TestResumeSavedPrompt: after a restart (nothing kept), a conversation that
// continues one whose prompt was saved with its digest is spliced onto the saved
// prompt, to the same bytes as the whole render; a saved prompt whose digest names
// other messages, another think value or other tools is not used.
func TestResumeSavedPrompt(t *testing.T) {
	defer func(p *promptCache) { prompts = p }(prompts)
	for _, fam := range renderFamilies(t)[:5] { // hearth's script and parity templates
		if !fam.incremental {
			continue
		}
		t.Run(fam.name, func(t *testing.T) {
			show := fam.show
			r := NewRenderer(&show).(renderer)
			rng := rand.New(rand.NewPCG(3, 5))
			var msgs []engine.Message
			var ends []int // where each turn's input ends
			for turn := range 30 {
				in, out := randomTurn(rng, msgs, true, turn)
				for _, m := range in {
					if m.Role != "system" { // a late system message is never spliced over
						msgs = append(msgs, m)
					}
				}
				ends = append(ends, len(msgs))
				msgs = append(msgs, out...)
			}
			// The response of turn 20 is saved with its prompt, by an earlier process.
			prefix := &engine.Conversation{Messages: msgs[:ends[20]], Tools: testTools}
			prompts = newPromptCache(promptCacheBudget)
			p, err := r.RenderPrompt(prefix, nil)
			if err != nil {
				t.Fatal(err)
			}
			digest, ok := r.PromptDigest(prefix, nil)
			if !ok {
				t.Fatal("no digest")
			}
			saved, ok := engine.ParseSavedPrompt(engine.SavedPrompt{Prompt: p, Messages: ends[20], Digest: digest}.MarshalBinary())
			if !ok || saved.Prompt != p || saved.Messages != ends[20] {
				t.Fatalf("saved prompt did not round-trip: %v", ok)
			}

			conv := &engine.Conversation{Messages: msgs[:ends[29]], Tools: testTools}
			want, err := RenderPrompt(&show, conv, nil)
			if err != nil {
				t.Fatal(err)
			}
			resume := func(conv engine.Conversation, saved engine.SavedPrompt, think *engine.Think) (string, PromptCacheStats) {
				prompts = newPromptCache(promptCacheBudget) // a restart
				conv.Resume = &saved
				got, err := r.RenderPrompt(&conv, think)
				if err != nil {
					t.Fatal(err)
				}
				return got, ReadPromptCacheStats()
			}
			got, st := resume(*conv, saved, nil)
			if got != want {
				t.Fatalf("resumed render differs from the whole")
			}
			if st.Resumed != 1 || st.Full != 0 {
				t.Fatalf("stats %+v: want the saved prompt taken up, nothing rendered whole", st)
			}

			// Saved prompts of something else are refused, and the render is whole.
			other := append([]engine.Message(nil), msgs...)
			other[ends[3]-1].Content += " (edited)"
			od, _ := r.PromptDigest(&engine.Conversation{Messages: other[:ends[20]], Tools: testTools}, nil)
			noTools, _ := r.PromptDigest(&engine.Conversation{Messages: msgs[:ends[20]]}, nil)
			thinking, _ := r.PromptDigest(prefix, &engine.Think{Value: true})
			for name, d := range map[string][]byte{"other messages": od, "no tools": noTools, "think set": thinking} {
				s := saved
				s.Digest = d
				got, st := resume(*conv, s, nil)
				if got != want || st.Resumed != 0 || st.Full != 1 {
					t.Errorf("%s: resumed %d, full %d, same text %v", name, st.Resumed, st.Full, got == want)
				}
			}
			// A saved prompt of more messages than the conversation has is not used.
			short := engine.Conversation{Messages: msgs[:ends[19]], Tools: testTools}
			wantShort, _ := RenderPrompt(&show, &short, nil)
			if got, st := resume(short, saved, nil); got != wantShort || st.Resumed != 0 {
				t.Errorf("a saved prompt longer than the conversation: resumed %d, same text %v", st.Resumed, got == wantShort)
			}
		})
	}
}
