package server_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"hearth"
	"hearth/cmd/hearth/wire"
	"hearth/engine/ollama/testenv"
	"hearth/respond"
	"hearth/scriptmodel"
)

// testImage is a solid-colour image generated for a test, with its size and colour.
type testImage struct {
	w, h   int
	colour scriptmodel.Colour
	jpeg   bool
}

var rgb = map[scriptmodel.Colour]color.RGBA{
	scriptmodel.Red:   {220, 30, 20, 255},
	scriptmodel.Green: {30, 200, 40, 255},
	scriptmodel.Blue:  {20, 40, 230, 255},
}

// dataURL encodes the image as a base64 data URL, PNG or JPEG.
func (ti testImage) dataURL(t *testing.T) string {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, ti.w, ti.h))
	for y := 0; y < ti.h; y++ {
		for x := 0; x < ti.w; x++ {
			img.Set(x, y, rgb[ti.colour])
		}
	}
	var buf bytes.Buffer
	mime := "image/png"
	var err error
	if ti.jpeg {
		mime = "image/jpeg"
		err = jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90})
	} else {
		err = png.Encode(&buf, img)
	}
	if err != nil {
		t.Fatal(err)
	}
	return "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(buf.Bytes())
}

// userTurn is the JSON of a user message of text and images, images first.
func userTurn(t *testing.T, text string, imgs ...testImage) string {
	parts := []map[string]string{}
	for _, im := range imgs {
		parts = append(parts, map[string]string{"type": "input_image", "image_url": im.dataURL(t)})
	}
	parts = append(parts, map[string]string{"type": "input_text", "text": text})
	b, _ := json.Marshal(map[string]any{"type": "message", "role": "user", "content": parts})
	return string(b)
}

// imageTokens is what the runtime makes of imgs: their tokens by the model's geometry.
func imageTokens(imgs []testImage) int {
	n := 0
	for _, im := range imgs {
		n += scriptmodel.ImageTokens(im.w, im.h)
	}
	return n
}

// TestVisionE2E sends images through hearth to the vision script model on the real
// runtime: the answer names the images' dominant colour, so it is exact only if the
// pixels reached the model, and the input tokens are the text's plus each image's.
func TestVisionE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	m := testenv.Model(t, scriptmodel.VisionModel)
	model := scriptmodel.VisionModel
	show, err := testenv.Runtime(t).Client.Show(context.Background(), &api.ShowRequest{Model: model})
	if err != nil || !slices.Contains(show.Capabilities, "vision") {
		t.Fatalf("the runtime does not list %s as a vision model: %v %v", model, show, err)
	}
	const question = "Which colour is this?"
	// Template's prompt for one user turn; image tags are cut out of the text by
	// the runtime and replaced by the image's tokens.
	prompt := "<|user|>" + question + "<|end|>\n" + scriptmodel.EntryAssistant

	cases := []struct {
		name   string
		imgs   []testImage
		colour scriptmodel.Colour
	}{
		{"png", []testImage{{64, 64, scriptmodel.Red, false}}, scriptmodel.Red},
		{"jpeg, not square", []testImage{{40, 24, scriptmodel.Green, true}}, scriptmodel.Green},
		{"small png, not scaled up", []testImage{{9, 17, scriptmodel.Blue, false}}, scriptmodel.Blue},
		// The answer is the average over all image tokens: two blue images of
		// the red one's size outweigh it.
		{"several images", []testImage{
			{32, 32, scriptmodel.Red, false}, {32, 32, scriptmodel.Blue, true}, {32, 32, scriptmodel.Blue, false},
		}, scriptmodel.Blue},
		{"no image", nil, scriptmodel.NoImage},
	}
	for _, tc := range cases {
		for _, stream := range []bool{false, true} {
			label := tc.name + map[bool]string{false: " (json)", true: " (sse)"}[stream]
			body := reqBody(model, stream, `"input":[`+userTurn(t, question, tc.imgs...)+`]`)
			var r *hearth.Response
			var events []map[string]any
			if stream {
				events, r = createSSE(t, srv, body)
			} else {
				r = createJSON(t, srv, body)
			}
			if r.Status != hearth.StatusCompleted || r.Usage == nil {
				t.Fatalf("%s: status %s usage %v error %+v", label, r.Status, r.Usage, r.Error)
			}
			text, outTokens := m.Answer(tc.colour)
			sameItems(t, label, r.Output, []item{{Type: "message", Status: "completed", Text: text}})
			wantIn := m.CountTokens(prompt) + imageTokens(tc.imgs)
			if r.Usage.InputTokens != wantIn || r.Usage.OutputTokens != outTokens {
				t.Errorf("%s: usage in %d out %d, want in %d (%d of them the images') out %d",
					label, r.Usage.InputTokens, r.Usage.OutputTokens, wantIn, imageTokens(tc.imgs), outTokens)
			}
			// Each case's JSON request follows other images under the same [img-0]
			// text; its SSE twin repeats it exactly.
			cached := r.Usage.InputTokensDetails.CachedTokens
			if stream && cached != wantIn-1 {
				t.Errorf("%s: cached_tokens %d, want %d: the same prompt and images again", label, cached, wantIn-1)
			}
			if !stream && len(tc.imgs) > 0 && cached >= wantIn-imageTokens(tc.imgs) {
				t.Errorf("%s: cached_tokens %d of %d count another request's image as cached", label, cached, wantIn)
			}
			if stream {
				checkDeltasMatch(t, label, events, r)
			}
		}
	}
}

// TestVisionChainE2E: an image sent in one turn stays in the context of the next,
// chained by previous_response_id, and is counted there again.
func TestVisionChainE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	m := testenv.Model(t, scriptmodel.VisionModel)
	model := scriptmodel.VisionModel
	green := testImage{48, 48, scriptmodel.Green, true}
	first := createJSON(t, srv, reqBody(model, false, `"input":[`+userTurn(t, "Look.", green)+`]`))
	answer, _ := m.Answer(scriptmodel.Green)
	if got := first.Output[0].Text(hearth.PartOutputText); first.Status != hearth.StatusCompleted || got != answer {
		t.Fatalf("first turn: status %s text %q, want %q", first.Status, got, answer)
	}
	for _, stream := range []bool{false, true} {
		body := reqBody(model, stream, fmt.Sprintf(`"previous_response_id":%q,"input":"And now?"`, first.ID))
		var r *hearth.Response
		if stream {
			_, r = createSSE(t, srv, body)
		} else {
			r = createJSON(t, srv, body)
		}
		text, outTokens := m.Answer(scriptmodel.Green)
		sameItems(t, fmt.Sprint("second turn, stream ", stream), r.Output, []item{{Type: "message", Status: "completed", Text: text}})
		prompt := "<|user|>Look.<|end|>\n" + scriptmodel.EntryAssistant + answer + "<|end|>\n" +
			"<|user|>And now?<|end|>\n" + scriptmodel.EntryAssistant
		wantIn := m.CountTokens(prompt) + scriptmodel.ImageTokens(green.w, green.h)
		if r.Usage == nil || r.Usage.InputTokens != wantIn || r.Usage.OutputTokens != outTokens {
			t.Errorf("second turn, stream %v: usage %+v, want input %d output %d", stream, r.Usage, wantIn, outTokens)
		}
	}
}

// TestVisionErrorsE2E: an image to a model without vision is a 400 naming the input,
// an image that cannot be decoded a 400 and one over the server's limit a 413, both
// naming the part, before any generation.
func TestVisionErrorsE2E(t *testing.T) {
	red := testImage{64, 64, scriptmodel.Red, false}
	input := `"input":[` + userTurn(t, "What is this?", red) + `]`
	// A PNG cut short: it sniffs as an image but cannot be decoded, which the
	// runtime would report as its own failure.
	full := red.dataURL(t)
	truncated := full[:len("data:image/png;base64,")+64]
	truncatedInput := `"input":[{"type":"message","role":"user","content":[{"type":"input_image","image_url":"` + truncated + `"}]}]`
	limited := httptest.NewServer(wire.New(wire.Config{Runtime: testenv.Runtime(t),
		Limits: respond.Limits{MaxImageBytes: 64}}))
	t.Cleanup(limited.Close)
	cases := []struct {
		name, url, body    string
		status             int
		code, param, inMsg string
	}{
		{"text-only model", newHearth(t).URL, reqBody(scriptmodel.PlainModel, false, input),
			http.StatusBadRequest, "model_not_vision_capable", "input", "does not accept images"},
		{"text-only model, streamed", newHearth(t).URL, reqBody(scriptmodel.PlainModel, true, input),
			http.StatusBadRequest, "model_not_vision_capable", "input", "does not accept images"},
		{"truncated image", newHearth(t).URL, reqBody(scriptmodel.VisionModel, false, truncatedInput),
			http.StatusBadRequest, "invalid_image_url", "input[0].content[0].image_url", "cannot be"},
		{"over the image limit", limited.URL, reqBody(scriptmodel.VisionModel, false, input),
			http.StatusRequestEntityTooLarge, "image_too_large", "input[0].content[0].image_url", "at most 64 bytes"},
	}
	for _, tc := range cases {
		resp, b := post(t, tc.url+"/v1/responses", tc.body)
		var e struct {
			Error struct{ Message, Type, Param, Code string }
		}
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatalf("%s: %v in %s", tc.name, err, b)
		}
		if resp.StatusCode != tc.status || e.Error.Code != tc.code || e.Error.Param != tc.param ||
			e.Error.Type != "invalid_request_error" || !strings.Contains(e.Error.Message, tc.inMsg) {
			t.Errorf("%s: status %d error %+v, want %d code %q param %q message with %q",
				tc.name, resp.StatusCode, e.Error, tc.status, tc.code, tc.param, tc.inMsg)
		}
	}
}
