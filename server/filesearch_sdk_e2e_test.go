package server_test

import (
	"testing"

	"hearth/cmd/hearth/wire"
	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
)

// TestOpenAISDKFileSearchE2E runs testdata/openai-sdk/filesearch.mjs: the official
// openai npm package loads the team's documents (files.create,
// vectorStores.fileBatches.uploadAndPoll), searches them (vectorStores.search) and asks
// about them with the file_search tool (responses.create and responses.stream), and
// checks the file_search_call, its results and the answer's file_citation. It needs
// Node.js and npm, as TestOpenAISDKE2E does.
func TestOpenAISDKFileSearchE2E(t *testing.T) {
	ctx, node, dir := nodeProject(t, sdkDir)

	srv, _, _ := fileSearchHearth(t, wire.Config{})
	testenv.Model(t, scriptmodel.FileSearchModel)
	expect := mustJSON(t, map[string]any{
		"model":          scriptmodel.FileSearchModel,
		"embeddingModel": scriptmodel.EmbedModel,
		"docs":           fsDocs,
		"input":          "How many days of leave do new hires get?",
		"query":          scriptmodel.FileSearchQuery,
		"answer":         scriptmodel.FileSearchAnswerText,
	})
	runNode(ctx, t, node, dir, "filesearch.mjs",
		"OPENAI_BASE_URL="+srv.URL+"/v1",
		"OPENAI_API_KEY=unused",
		"HEARTH_FS_EXPECT="+expect,
	)
}
