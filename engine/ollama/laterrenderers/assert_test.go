package laterrenderers

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// assert stands in for testify's assert package, which Ollama v0.32.15's
// gemma4_reference_test.go uses and hearth does not require: the ported test keeps its
// calls as written. Like testify's, each check reports a failure and lets the test go on.
var assert testAssertions

type testAssertions struct{}

func (testAssertions) NoError(t *testing.T, err error, msgAndArgs ...any) {
	t.Helper()
	if err != nil {
		t.Errorf("unexpected error: %v%s", err, assertMessage(msgAndArgs))
	}
}

func (testAssertions) Equal(t *testing.T, expected, actual any, msgAndArgs ...any) {
	t.Helper()
	if diff := cmp.Diff(expected, actual); diff != "" {
		t.Errorf("not equal (-expected +actual):\n%s%s", diff, assertMessage(msgAndArgs))
	}
}

func (testAssertions) NotEqual(t *testing.T, expected, actual any, msgAndArgs ...any) {
	t.Helper()
	if cmp.Equal(expected, actual) {
		t.Errorf("should not be equal: %#v%s", actual, assertMessage(msgAndArgs))
	}
}

func (testAssertions) Contains(t *testing.T, s, substr string, msgAndArgs ...any) {
	t.Helper()
	if !strings.Contains(s, substr) {
		t.Errorf("%q does not contain %q%s", s, substr, assertMessage(msgAndArgs))
	}
}

func (testAssertions) NotContains(t *testing.T, s, substr string, msgAndArgs ...any) {
	t.Helper()
	if strings.Contains(s, substr) {
		t.Errorf("%q should not contain %q%s", s, substr, assertMessage(msgAndArgs))
	}
}

// assertMessage formats testify's optional message arguments: a format string and its
// values, or one value.
func assertMessage(msgAndArgs []any) string {
	switch {
	case len(msgAndArgs) == 0:
		return ""
	case len(msgAndArgs) == 1:
		return "\n" + fmt.Sprint(msgAndArgs[0])
	default:
		if format, ok := msgAndArgs[0].(string); ok {
			return "\n" + fmt.Sprintf(format, msgAndArgs[1:]...)
		}
		return "\n" + fmt.Sprint(msgAndArgs...)
	}
}
