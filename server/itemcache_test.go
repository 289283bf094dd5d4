package server

import (
	"encoding/json"
	"fmt"
	"testing"

	"hearth"
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
	if len(c.cur) != 1 {
		t.Errorf("%d entries after decoding one item twice", len(c.cur))
	}
	if st := c.stats(); st != (CacheStats{Entries: 1, Bytes: len(raw), Budget: 4096, Hits: 1, Misses: 1}) {
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
	held := 0
	for k := range c.cur {
		held += len(k)
	}
	for k := range c.old {
		held += len(k)
	}
	if held > c.budget {
		t.Errorf("cache holds %d bytes of JSON, budget %d", held, c.budget)
	}
	// What /metrics reports is what the cache holds.
	if st := c.stats(); st.Entries != len(c.cur)+len(c.old) || st.Bytes != held || st.Bytes > st.Budget {
		t.Errorf("stats %+v; the cache holds %d entries, %d bytes", st, len(c.cur)+len(c.old), held)
	}
	if len(c.cur) == 0 || len(c.old) == 0 {
		t.Errorf("generations: %d current, %d old entries", len(c.cur), len(c.old))
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
