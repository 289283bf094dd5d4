package server

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"hearth/engine"
)

// openAIModel is one entry of OpenAI's GET /v1/models list.
type openAIModel struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
	// Runtimes are where the model lives when several runtimes serve as one.
	Runtimes []string `json:"runtimes,omitempty"`
	// Hearth is what hearth adds to OpenAI's entry, under its own name so that clients
	// of OpenAI's shape ignore it: present while a runtime holds the model in memory.
	Hearth *modelState `json:"hearth,omitempty"`
}

type modelState struct {
	// Loaded has one entry per runtime holding the model (one, unless several runtimes
	// serve as one).
	Loaded []loadedModel `json:"loaded"`
}

// loadedModel is where a runtime placed a loaded model: its /api/ps figures and, where
// the runtime says, how many layers run on which device.
type loadedModel struct {
	Runtime       string    `json:"runtime,omitempty"`
	Size          int64     `json:"size"`
	SizeVRAM      int64     `json:"size_vram"`
	Processor     string    `json:"processor"`
	ContextLength int       `json:"context_length,omitempty"`
	ExpiresAt     time.Time `json:"expires_at"`
	Layers        *layers   `json:"layers,omitempty"`
	// LayersNote says why Layers is missing: hearth shows no count it was not told.
	LayersNote string `json:"layers_note,omitempty"`
	// CPUKernels is the build of the CPU kernels the model's runner runs: one of ggml's
	// CPU variants ("haswell", "skylakex", ...) or "builtin" (docs/cpu.md).
	CPUKernels string `json:"cpu_kernels,omitempty"`
}

type layers struct {
	Total   int            `json:"total"`
	Devices []deviceLayers `json:"devices"`
	CPU     int            `json:"cpu"`
}

type deviceLayers struct {
	Device string `json:"device"`
	Layers int    `json:"layers"`
}

// layersNotReported is LayersNote where the runtime does not say (an external Ollama).
const layersNotReported = "layers not reported by this runtime"

// modelsAPI serves /v1/models: the runtimes' models, OpenAI's shape.
type modelsAPI struct{ *Server }

// modelEntry is the list entry of m; its runtimes only behind a pool of several, and
// its placement when a runtime in loaded holds it.
func (s modelsAPI) modelEntry(m engine.ListedModel, loaded []engine.LoadedModel) openAIModel {
	e := openAIModel{ID: m.Name, Object: "model", Created: m.ModifiedAt.Unix(), OwnedBy: "library"}
	several := len(s.pool.Labels()) > 1
	if several {
		e.Runtimes = m.Runtimes
	}
	for _, l := range loaded {
		if l.Name != m.Name && l.Name != m.Model {
			continue
		}
		if e.Hearth == nil {
			e.Hearth = &modelState{}
		}
		lm := loadedModel{Size: l.Size, SizeVRAM: l.VRAM, Processor: l.Processor(), ContextLength: l.ContextLength, ExpiresAt: l.ExpiresAt, CPUKernels: l.CPUKernels}
		if several {
			lm.Runtime = l.Runtime
		}
		if l.Layers == nil {
			lm.LayersNote = layersNotReported
		} else {
			lm.Layers = &layers{Total: l.Layers.Total, CPU: l.Layers.CPU, Devices: []deviceLayers{}}
			for _, d := range l.Layers.Devices {
				lm.Layers.Devices = append(lm.Layers.Devices, deviceLayers{Device: d.Device, Layers: d.Layers})
			}
		}
		e.Hearth.Loaded = append(e.Hearth.Loaded, lm)
	}
	return e
}

// loadedModels is what the runtimes hold now; a runtime that does not answer only
// leaves the placement out of the list.
func (s modelsAPI) loadedModels(ctx context.Context) []engine.LoadedModel {
	loaded, _ := s.pool.Loaded(ctx)
	return loaded
}

func (s modelsAPI) listModels(c *gin.Context) {
	list, err := s.pool.Models(c.Request.Context())
	if err != nil {
		runtimeUnavailable(c, err)
		return
	}
	list = s.engine.Aliases.Listed(list)
	loaded := s.loadedModels(c.Request.Context())
	data := make([]openAIModel, 0, len(list))
	for _, m := range list {
		data = append(data, s.modelEntry(m, loaded))
	}
	c.JSON(http.StatusOK, gin.H{"object": "list", "data": data})
}

func (s modelsAPI) getModel(c *gin.Context) {
	name := strings.TrimPrefix(c.Param("model"), "/")
	list, err := s.pool.Models(c.Request.Context())
	if err != nil {
		runtimeUnavailable(c, err)
		return
	}
	for _, m := range s.engine.Aliases.Listed(list) {
		if m.Name == name || m.Model == name || strings.TrimSuffix(m.Name, ":latest") == name {
			c.JSON(http.StatusOK, s.modelEntry(m, s.loadedModels(c.Request.Context())))
			return
		}
	}
	c.JSON(http.StatusNotFound, gin.H{"error": gin.H{
		"message": "model '" + name + "' not found", "type": "invalid_request_error", "param": "model", "code": "model_not_found",
	}})
}

func runtimeUnavailable(c *gin.Context, err error) {
	c.JSON(http.StatusBadGateway, gin.H{"error": gin.H{
		"message": "runtime unavailable: " + err.Error(), "type": "server_error", "param": nil, "code": "runtime_unavailable",
	}})
}
