package respond

import (
	"encoding/json"
	"fmt"
	"testing"

	"hearth"
	"hearth/internal/gencache"
)

func TestItemCache(t *testing.T) {
	c := newItemCache(4096)
	raw := []byte(`{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hi","annotations":[],"logprobs":[]}]}`)
	var want hearth.Item
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	first, err := c.decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	// The caller owns what it gets: changing it must not change the next decode.
	first.Content[0].Text = "changed"
	second, err := c.decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(second); string(got) != string(mustMarshal(t, want)) {
		t.Errorf("second decode %s, want %s", got, mustMarshal(t, want))
	}
	if cur, _ := c.Generations(); cur != 1 {
		t.Errorf("%d entries after decoding one item twice", cur)
	}
	if st := c.Stats(); st != (gencache.Stats{Entries: 1, Bytes: len(raw), Budget: 4096, Hits: 1, Misses: 1}) {
		t.Errorf("stats after one miss and one hit: %+v", st)
	}

	// Bad JSON is an error and is not kept.
	if _, err := c.decode([]byte(`{"type":"message","content":[`)); err == nil {
		t.Error("truncated JSON decoded")
	}

	// Memory stays within the budget however many distinct items pass through.
	for i := range 1000 {
		if _, err := c.decode(fmt.Appendf(nil, `{"type":"message","id":"msg_%d","status":"completed","role":"user","content":[{"type":"input_text","text":"x"}]}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	// What /metrics reports is what the cache holds (gencache's tests count the
	// bytes against the keys held).
	st := c.Stats()
	cur, old := c.Generations()
	if st.Entries != cur+old || st.Bytes > st.Budget {
		t.Errorf("stats %+v; the cache holds %d entries", st, cur+old)
	}
	if cur == 0 || old == 0 {
		t.Errorf("generations: %d current, %d old entries", cur, old)
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
