package gencache

import (
	"fmt"
	"testing"
)

// TestCache: a hit in the old generation moves forward; the entries stay within the
// budget however many pass through; a value larger than a generation is not kept;
// Stats reports what is held and the lookups.
func TestCache(t *testing.T) {
	c := New[int](100)
	c.Put("a", 1, 30)
	if v, ok := c.Get("a"); !ok || v != 1 {
		t.Fatalf("get a: %d %v", v, ok)
	}
	if _, ok := c.Get("b"); ok {
		t.Fatal("b found")
	}
	if st := c.Stats(); st != (Stats{Entries: 1, Bytes: 30, Budget: 100, Hits: 1, Misses: 1}) {
		t.Errorf("stats %+v", st)
	}
	// b fills the generation past half the budget: a goes to the old one, and a hit
	// brings it back into the current one.
	c.Put("b", 2, 30)
	if len(c.old) != 1 || len(c.cur) != 1 {
		t.Fatalf("generations %d old, %d current", len(c.old), len(c.cur))
	}
	if _, ok := c.Get("a"); !ok {
		t.Fatal("a lost in the old generation")
	}
	if _, ok := c.cur["a"]; !ok {
		t.Error("a hit in the old generation did not move forward")
	}
	c.Put("huge", 3, 51)
	if _, ok := c.Get("huge"); ok {
		t.Error("a value larger than a generation was kept")
	}
	for i := range 1000 {
		c.Put(fmt.Sprint(i), i, 7)
	}
	if st := c.Stats(); st.Bytes > st.Budget || st.Bytes != c.curBytes+c.oldBytes || st.Entries != len(c.cur)+len(c.old) {
		t.Errorf("stats %+v over %d+%d bytes held", st, c.curBytes, c.oldBytes)
	}
	c.Clear()
	if st := c.Stats(); st.Entries != 0 || st.Bytes != 0 {
		t.Errorf("after Clear: %+v", st)
	}
}
