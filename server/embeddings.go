package server

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"hearth"
	"hearth/engine"
	"hearth/internal/textcap"
	"hearth/vectorstores"
)

// POST /v1/embeddings (OpenAI's shapes), answered by hearth itself rather than passed
// through: the key, admission (a slot of the model, fair across keys, the queue and
// its 429s), placement on a runtime that has the model, and metrics are those of
// responses. The vectors come from the runtime seam's Embedder.

// maxEmbeddingInputs is OpenAI's bound on the inputs of one request.
const maxEmbeddingInputs = 2048

type embeddingsRequest struct {
	Model          string
	Input          []string
	EncodingFormat string
	Dimensions     int
}

// decodeEmbeddingsRequest reads the body: input is a string or an array of strings
// (OpenAI's token arrays are refused: hearth embeds text, tokenised by the model).
func decodeEmbeddingsRequest(body []byte) (embeddingsRequest, error) {
	var raw struct {
		Model          *string         `json:"model"`
		Input          json.RawMessage `json:"input"`
		EncodingFormat *string         `json:"encoding_format"`
		Dimensions     *int            `json:"dimensions"`
		User           *string         `json:"user"`
	}
	var req embeddingsRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&raw); err != nil {
		return req, hearth.InvalidRequest("", hearth.CodeInvalidJSON, "The body is not a JSON object of the embeddings request: "+err.Error())
	}
	if raw.Model == nil || *raw.Model == "" {
		return req, hearth.InvalidRequest("model", hearth.CodeMissingRequiredParameter, "Missing required parameter: 'model'.")
	}
	req.Model = *raw.Model
	in := bytes.TrimSpace(raw.Input)
	switch {
	case len(in) == 0 || string(in) == "null":
		return req, hearth.InvalidRequest("input", hearth.CodeMissingRequiredParameter, "Missing required parameter: 'input'.")
	case in[0] == '"':
		var s string
		if err := json.Unmarshal(in, &s); err != nil {
			return req, hearth.InvalidRequest("input", hearth.CodeInvalidType, "Invalid 'input': "+err.Error())
		}
		req.Input = []string{s}
	case in[0] == '[':
		var items []json.RawMessage
		if err := json.Unmarshal(in, &items); err != nil {
			return req, hearth.InvalidRequest("input", hearth.CodeInvalidType, "Invalid 'input': "+err.Error())
		}
		for i, it := range items {
			var s string
			if err := json.Unmarshal(it, &s); err != nil {
				return req, hearth.InvalidRequest(fmt.Sprintf("input[%d]", i), hearth.CodeInvalidType,
					fmt.Sprintf("Invalid 'input[%d]': expected a string (hearth embeds text; token arrays are not accepted).", i))
			}
			req.Input = append(req.Input, s)
		}
	default:
		return req, hearth.InvalidRequest("input", hearth.CodeInvalidType, "Invalid 'input': expected a string or an array of strings.")
	}
	if len(req.Input) == 0 {
		return req, hearth.InvalidRequest("input", hearth.CodeEmptyArray, "Invalid 'input': expected at least one string.")
	}
	if len(req.Input) > maxEmbeddingInputs {
		return req, hearth.InvalidRequest("input", hearth.CodeArrayAboveMaxLength,
			fmt.Sprintf("Invalid 'input': %d strings; at most %d per request.", len(req.Input), maxEmbeddingInputs))
	}
	for i, s := range req.Input {
		if strings.TrimSpace(s) == "" {
			return req, hearth.InvalidRequest(fmt.Sprintf("input[%d]", i), hearth.CodeEmptyString,
				fmt.Sprintf("Invalid 'input[%d]': an empty string has no embedding.", i))
		}
	}
	req.EncodingFormat = "float"
	if raw.EncodingFormat != nil {
		switch *raw.EncodingFormat {
		case "float", "base64":
			req.EncodingFormat = *raw.EncodingFormat
		default:
			return req, hearth.InvalidRequest("encoding_format", hearth.CodeInvalidValue, "Invalid 'encoding_format': expected 'float' or 'base64'.")
		}
	}
	if raw.Dimensions != nil {
		if *raw.Dimensions < 1 {
			return req, hearth.InvalidRequest("dimensions", hearth.CodeIntegerBelowMinValue, "Invalid 'dimensions': expected at least 1.")
		}
		req.Dimensions = *raw.Dimensions
	}
	return req, nil
}

// createEmbeddings serves POST /v1/embeddings.
func (s *Server) createEmbeddings(c *gin.Context) {
	body, err := readBody(c.Request.Body)
	if err != nil {
		s.writeError(c, err)
		return
	}
	req, err := decodeEmbeddingsRequest(body)
	if err != nil {
		s.writeError(c, err)
		return
	}
	if !engine.ParseModelName(req.Model).Valid() {
		s.writeError(c, hearth.ModelNotFound(textcap.Cut(req.Model, textcap.Model)))
		return
	}
	ctx := c.Request.Context()
	m := meta(c)
	m.Model = req.Model
	probe := &hearth.CreateResponseRequest{Model: req.Model}
	adm, retry, err := s.admissions.AdmitAs(ctx, m, probe, "", s.admissions.Place(ctx, owner(c), probe, ""))
	if retry != "" {
		c.Header("Retry-After", retry)
	}
	if err != nil {
		s.writeError(c, err)
		return
	}
	defer adm.Done()
	if err := adm.Wait(ctx); err != nil {
		c.Abort() // the client left while waiting
		return
	}
	c.Header(HeaderRuntime, adm.Runtime())
	res, err := adm.Embedder().Embed(ctx, &engine.EmbedRequest{Model: req.Model, Input: req.Input, Dimensions: req.Dimensions})
	if err != nil {
		// The client reads the error without the runtime's addresses and paths; the
		// log keeps them.
		s.log.Warn("embeddings failed", "model", textcap.Cut(req.Model, textcap.Model), "error", err)
		s.writeError(c, vectorstores.EmbedError(err, req.Model))
		return
	}
	label := s.models.Label(req.Model)
	s.metrics.Embeddings.WithLabelValues(label, m.Key).Add(float64(len(req.Input)))
	s.metrics.TokensIn.WithLabelValues(label, m.Key, adm.Runtime()).Add(float64(res.PromptTokens))
	data := make([]gin.H, len(res.Vectors))
	for i, v := range res.Vectors {
		var e any = v
		if req.EncodingFormat == "base64" {
			// OpenAI's base64: the little-endian float32 values.
			b := make([]byte, 4*len(v))
			for j, x := range v {
				binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(x))
			}
			e = base64.StdEncoding.EncodeToString(b)
		}
		data[i] = gin.H{"object": "embedding", "index": i, "embedding": e}
	}
	c.JSON(http.StatusOK, gin.H{"object": "list", "data": data, "model": req.Model,
		"usage": gin.H{"prompt_tokens": res.PromptTokens, "total_tokens": res.PromptTokens}})
}
