package ollama

// A model runner tokenizes the prompts it is sent with llama.cpp, whose pre-tokenizer
// falls back to std::regex for most vocabularies (every pattern but the few it has
// hand-written code for, such as GPT-2's and Llama 3's main one). libstdc++'s regex
// matcher recurses once per character a repetition matches, about 300 bytes of stack
// each, so a run of some 27,000 punctuation characters in a prompt overflows a thread
// stack of 8 MiB, the default glibc derives from RLIMIT_STACK: SIGSEGV, and the
// runner dies with every request it was serving.
//
// The runner's threads are the Go runtime's (cgo starts them with glibc's default
// size) and ggml's, and glibc reads that default once, when the process starts. So
// a runner raises its own RLIMIT_STACK and starts again (becoming its CPU variant, or
// executing itself anew) before any thread exists: every thread of the runner then
// has runnerStack of address space for its stack. Only pages a thread touches take
// memory; a deep recursion is what touches them.

// runnerStack is the thread stack size of a model runner: at ~300 bytes per character
// of recursion, runs of about 3.5 million characters. The token bound (engine
// TokenBound) keeps runs longer than window x the vocabulary's longest run from the
// runner; this covers what it lets through for common windows and vocabularies.
const runnerStack = 1 << 30

// runnerStackEnv marks a runner that already started again with its stack raised, so
// it does not loop when the limit could not be raised as far as asked.
const runnerStackEnv = "HEARTH_RUNNER_STACK"
