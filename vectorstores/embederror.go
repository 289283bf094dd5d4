package vectorstores

import (
	"errors"
	"fmt"
	"net/http"

	"hearth"
	"hearth/engine"
	"hearth/internal/scrub"
	"hearth/internal/textcap"
)

// EmbedError words the runtime's refusals for the client, of a search's queries and
// of /v1/embeddings.
func EmbedError(err error, model string) error {
	var se *engine.StatusError
	switch {
	case errors.Is(err, engine.ErrModelNotFound):
		return hearth.ModelNotFound(textcap.Cut(model, textcap.Model))
	case errors.Is(err, engine.ErrInputTooLong):
		return hearth.InvalidRequest("input", hearth.CodeContextLengthExceeded, "An input is longer than the embedding model's context window: "+err.Error())
	case errors.As(err, &se) && (se.StatusCode >= 400 && se.StatusCode < 500 || se.StatusCode == http.StatusNotImplemented):
		// 501 is a refusal too: Ollama 0.30 and later answer it for a generation model,
		// whose llama-server they start without embeddings.
		return hearth.InvalidRequest("model", hearth.CodeInvalidValue, fmt.Sprintf("The model '%s' cannot embed: %s.", textcap.Cut(model, textcap.Model), scrub.HostDetails(se.Message)))
	case errors.As(err, &se) && se.Message != "":
		// The runtime's own failure (a model it cannot load), said as a generation's is.
		return engine.RuntimeFailure(se.Message)
	}
	return err
}
