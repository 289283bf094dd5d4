package postgres

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
)

// TestSharedSecretOnce: replicas storing a secret at once with different values all get
// the one that was stored first, exactly one of them stores it, and a later call gets
// it unchanged whatever it offers.
func TestSharedSecretOnce(t *testing.T) {
	dbs := openReplicas(t, 3)
	got := make([][]byte, len(dbs))
	created := make([]bool, len(dbs))
	errs := make([]error, len(dbs))
	var wg sync.WaitGroup
	for i, db := range dbs {
		wg.Go(func() {
			got[i], created[i], errs[i] = db.SharedSecret(context.Background(), "seal.key", []byte(fmt.Sprint("value of ", i)))
		})
	}
	wg.Wait()
	n := 0
	for i := range dbs {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if !bytes.Equal(got[i], got[0]) {
			t.Errorf("replica %d got %q, replica 0 %q", i, got[i], got[0])
		}
		if created[i] {
			n++
			if want := fmt.Sprint("value of ", i); string(got[i]) != want {
				t.Errorf("replica %d stored the secret but got %q, want its own %q", i, got[i], want)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d replicas say they stored the secret, want 1", n)
	}
	again, made, err := dbs[1].SharedSecret(context.Background(), "seal.key", []byte("another"))
	if err != nil || made || !bytes.Equal(again, got[0]) {
		t.Errorf("later call: %q, created %v, %v; want %q unchanged", again, made, err, got[0])
	}
}
