package hearth_test

import (
	"testing"
	"time"

	"hearth"
)

// The messages the model writes get OpenAI's phase: commentary before a tool call in
// the same response, final_answer otherwise; output_item.done carries it; a replayed
// message keeps the phase it was stored with, none included.
func TestBuilderPhase(t *testing.T) {
	var done []hearth.Item
	b := hearth.NewBuilder(hearth.NewResponse("resp_1", &hearth.CreateResponseRequest{Model: "m"}, time.Unix(0, 0)),
		func(e hearth.Event) {
			if e.Type == hearth.EventOutputItemDone && e.Item != nil {
				done = append(done, *e.Item)
			}
		})
	steps := []func() error{
		func() error { return b.TextDelta("Let me look.") },
		func() error { return b.StartFunctionCall("ls", "") },
		func() error { return b.ArgumentsDelta(`{}`) },
		func() error { return b.EndItem(hearth.StatusCompleted) },
		func() error { return b.TextDelta("Done.") },
		func() error { return b.StartItemFrom(hearth.Item{Type: hearth.ItemMessage, ID: "msg_stored"}) },
		func() error { return b.TextDelta("replayed") },
		func() error { return b.Complete(hearth.Usage{}) },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	var phases []string
	for _, it := range done {
		if it.Type == hearth.ItemMessage {
			phases = append(phases, it.Phase)
		}
	}
	if want := []string{hearth.PhaseCommentary, hearth.PhaseFinalAnswer, ""}; len(phases) != 3 || phases[0] != want[0] || phases[1] != want[1] || phases[2] != want[2] {
		t.Errorf("phases %q, want %q", phases, want)
	}
}
