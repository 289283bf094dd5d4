package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"hearth/engine"
)

func modelsCommand() *cobra.Command {
	var (
		o          clientOptions
		modelsFile string
	)
	cmd := &cobra.Command{
		Use:   "models",
		Short: "List the models of a running hearth, with the tool and reasoning format hearth detects",
		Long: `List the runtime's models through a running hearth (--host): name, size, family, the
tool-call and reasoning format hearth detects for each (models.json, extended by
--models-file), the runtime's capabilities, the trained context length and, for a loaded
model, how much of it the runtime placed on the GPU (LOADED, as ollama ps: "100% GPU",
"30%/70% CPU/GPU" or "100% CPU") and how many of its layers run on which device (LAYERS:
"29/29 Vulkan0", "20/29 Vulkan0, 9/29 CPU", "0/29 (CPU)"; "not reported" by an external
Ollama, whose API does not say). When hearth serves several runtimes (--runtime), a
RUNTIMES column says which have each model.`,
		Example: `  hearth models
  hearth models --host http://gpu-box:8080 --api-key $KEY`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			hc, err := o.client()
			if err != nil {
				return err
			}
			formats, err := engine.LoadFormats(modelsFile)
			if err != nil {
				return err
			}
			list, err := hc.api.List(c.Context())
			if err != nil {
				return hc.explain(err)
			}
			if len(list.Models) == 0 {
				fmt.Fprintln(c.ErrOrStderr(), "No models. Pull one with: hearth pull qwen3:0.6b")
				return nil
			}
			// Loaded models and where their weights are: the runtime's /api/ps through
			// hearth; a failure here only leaves the column empty.
			placement := map[string]string{}
			if ps, err := hc.api.ListRunning(c.Context()); err == nil {
				for _, r := range ps.Models {
					placement[r.Name] = processor(r.Size, r.SizeVRAM)
				}
			}
			eng := engine.New(hc.modelSeam(c.Context()), formats, slog.New(slog.NewTextHandler(io.Discard, nil)))
			info, several := hc.hearthModels(c.Context())
			w := tabwriter.NewWriter(c.OutOrStdout(), 0, 4, 2, ' ', 0)
			header := "NAME\tSIZE\tFAMILY\tFORMAT\tREASONING\tCAPABILITIES\tCONTEXT\tLOADED\tLAYERS"
			if several {
				header += "\tRUNTIMES"
			}
			fmt.Fprintln(w, header)
			for _, m := range list.Models {
				row := modelRow{name: m.Name, size: humanBytes(m.Size), family: m.Details.Family}
				if em, err := eng.Model(c.Context(), m.Name); err != nil {
					row.format = "error: " + err.Error()
				} else {
					row.fill(em)
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s", row.name, row.size, dash(row.family), dash(row.format), dash(row.reasoning), dash(row.caps), dash(row.context), dash(placement[m.Name]), dash(info[m.Name].layers()))
				if several {
					fmt.Fprintf(w, "\t%s", dash(strings.Join(info[m.Name].Runtimes, ",")))
				}
				fmt.Fprintln(w)
			}
			return w.Flush()
		},
	}
	o.addFlags(cmd)
	cmd.Flags().StringVar(&modelsFile, "models-file", "", "a models.json whose model formats extend or override the built-in ones")
	bindEnv(cmd)
	return cmd
}

type modelRow struct {
	name, size, family, format, reasoning, caps, context string
}

func (r *modelRow) fill(m *engine.Model) {
	switch {
	case m.Info.UnsupportedBy != "":
		// The model cannot be served at all: that is its format column's news.
		r.format = fmt.Sprintf("architecture %s: not in %s", m.Info.Architecture, m.Info.UnsupportedBy)
	case m.UnknownMarkup != "":
		// No format reads this model's markup: it is served as plain text, no tools.
		r.format = "text only"
	case m.Format != nil:
		r.format = m.Format.ID
		if m.Format.Emulated {
			r.format += " (emulated)"
		}
		if m.Format.Reasoning != nil {
			r.reasoning = m.Format.Reasoning.Open + "…" + m.Format.Reasoning.Close
		} else if to := m.Format.Tools.ReasoningRecipient; to != "" {
			// Glimmer's reasoning is a message addressed to it, not delimited text.
			r.reasoning = "messages to=" + to
		}
	}
	var caps []string
	for _, c := range m.Info.Capabilities {
		caps = append(caps, string(c))
	}
	slices.Sort(caps)
	r.caps = strings.Join(caps, ",")
	if m.ContextLength > 0 {
		r.context = fmt.Sprint(m.ContextLength)
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func humanBytes(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTPE"[exp])
}

// binaryBytes is a device's memory in binary units, as GPU tools show it ("7.8 GiB").
func binaryBytes(n uint64) string {
	const kib, mib, gib = 1 << 10, 1 << 20, 1 << 30
	switch {
	case n >= gib:
		return fmt.Sprintf("%.1f GiB", float64(n)/gib)
	case n >= mib:
		return fmt.Sprintf("%.1f MiB", float64(n)/mib)
	case n >= kib:
		return fmt.Sprintf("%.1f KiB", float64(n)/kib)
	}
	return fmt.Sprintf("%d B", n)
}

// processor says where a loaded model's weights are, from /api/ps's size and size_vram,
// in ollama ps's words.
func processor(size, vram int64) string {
	return engine.LoadedModel{Size: size, VRAM: vram}.Processor()
}

// hearthModel is what hearth's /v1/models adds to a model's entry that the runtime's
// own API does not say: which runtimes have it, and where loaded copies run.
type hearthModel struct {
	ID       string   `json:"id"`
	Runtimes []string `json:"runtimes"`
	Hearth   *struct {
		Loaded []struct {
			Runtime string `json:"runtime"`
			Layers  *struct {
				Total   int `json:"total"`
				Devices []struct {
					Device string `json:"device"`
					Layers int    `json:"layers"`
				} `json:"devices"`
				CPU int `json:"cpu"`
			} `json:"layers"`
			LayersNote string `json:"layers_note"`
		} `json:"loaded"`
	} `json:"hearth"`
}

// layers says where the loaded copies of the model run, layer by layer ("29/29
// Vulkan0"); several runtimes' copies are named by runtime. Empty when not loaded.
func (m hearthModel) layers() string {
	if m.Hearth == nil {
		return ""
	}
	var parts []string
	for _, l := range m.Hearth.Loaded {
		text := "not reported"
		if l.Layers != nil {
			el := engine.Layers{Total: l.Layers.Total, CPU: l.Layers.CPU}
			for _, d := range l.Layers.Devices {
				el.Devices = append(el.Devices, engine.DeviceLayers{Device: d.Device, Layers: d.Layers})
			}
			text = el.String()
		}
		if l.Runtime != "" {
			text = l.Runtime + ": " + text
		}
		parts = append(parts, text)
	}
	return strings.Join(parts, "; ")
}

// hearthModels reads hearth's /v1/models by model name; nil when it cannot be read (an
// older hearth, or no answer), which only leaves the columns that need it empty.
// several reports whether the list names runtimes (hearth serves several as one).
func (c *hearthClient) hearthModels(ctx context.Context) (models map[string]hearthModel, several bool) {
	req, err := http.NewRequestWithContext(ctx, "GET", c.base.JoinPath("/v1/models").String(), nil)
	if err != nil {
		return nil, false
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, false
	}
	defer resp.Body.Close()
	var list struct {
		Data []hearthModel `json:"data"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&list) != nil {
		return nil, false
	}
	models = map[string]hearthModel{}
	for _, m := range list.Data {
		models[m.ID] = m
		several = several || len(m.Runtimes) > 0
	}
	return models, several
}
