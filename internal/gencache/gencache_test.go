package gencache

import (
	"fmt"
	"testing"
)

// TestBudget: however many distinct entries pass through, the cache holds at most its
// budget, its stats say what it holds, and both generations are in use.
func TestBudget(t *testing.T) {
	c := New[int](4096)
	for i := range 1000 {
		k := fmt.Sprintf("key-%04d-%s", i, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx")
		c.Put(k, i, len(k))
	}
	held := 0
	for k := range c.cur {
		held += len(k)
	}
	for k := range c.old {
		held += len(k)
	}
	if held > c.budget {
		t.Errorf("cache holds %d bytes, budget %d", held, c.budget)
	}
	if st := c.Stats(); st.Entries != len(c.cur)+len(c.old) || st.Bytes != held || st.Bytes > st.Budget {
		t.Errorf("stats %+v; the cache holds %d entries, %d bytes", st, len(c.cur)+len(c.old), held)
	}
	if len(c.cur) == 0 || len(c.old) == 0 {
		t.Errorf("generations: %d current, %d old entries", len(c.cur), len(c.old))
	}
	// A hit in the old generation moves forward; Clear drops everything.
	for k := range c.old {
		if _, ok := c.Get(k); !ok {
			t.Fatal("an old entry was not found")
		}
		if _, ok := c.cur[k]; !ok {
			t.Error("a hit in the old generation did not move forward")
		}
		break
	}
	c.Clear()
	if st := c.Stats(); st.Entries != 0 || st.Bytes != 0 {
		t.Errorf("after Clear: %+v", st)
	}
}
