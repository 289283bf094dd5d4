package engine

// The parity templates, for the external tests (prompt_parity_test.go), which run on
// the real runtime through testenv and so cannot be in package engine: testenv's
// runtime implements the engine's seam, which imports engine.
const (
	Qwen3ParityTemplate   = qwen3ParityTemplate
	Llama31ParityTemplate = llama31ParityTemplate
	LegacyParityTemplate  = legacyParityTemplate
)

var ItCall = itCall
var ItOutput = itOutput
var ItReasoning = itReasoning
var ItUser = itUser
var TestDataURL = testDataURL
var TestFunctionTool = testFunctionTool
var TestPNG = testPNG
var ItAssistant = itAssistant
var ItDeveloper = itDeveloper
var ItMsg = itMsg
var ItPart = itPart
