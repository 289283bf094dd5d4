package schematest

import (
	"testing"
)

// TestDocumentNeedsNothingBesideRepository loads the schema from a working directory with
// nothing around it, as in a fresh clone: the document must come with the package.
func TestDocumentNeedsNothingBesideRepository(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("HEARTH_OPENAPI", "")
	d := &Doc{}
	if err := d.load(); err != nil {
		t.Fatalf("load the OpenAPI document: %v", err)
	}
	if err := d.Check("Error", []byte(`{"message":"m","code":"server_error"}`)); err != nil {
		t.Errorf("a valid error object was rejected: %v", err)
	}
	if err := d.Check("Error", []byte(`{"message":"m"}`)); err == nil {
		t.Error("an error object without code was accepted")
	}
}
