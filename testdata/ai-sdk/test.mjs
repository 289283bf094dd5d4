// End-to-end check of hearth with the Vercel AI SDK (`ai` with `@ai-sdk/openai`'s
// `openai.responses(model)` provider): multi-step tool loops with generateText and
// streamText, with store on (the SDK then sends earlier output back as item_reference
// items) and off (it sends the items, reasoning sealed in encrypted_content).
//
// Run by server/ai_sdk_e2e_test.go, which starts hearth and passes everything this
// script expects through the environment (nothing about the models is hard-coded here):
//
//   HEARTH_BASE_URL    hearth's base URL, e.g. http://127.0.0.1:PORT/v1
//   HEARTH_AI_EXPECT   JSON: {model, input, reasoning, calls: [{name, arguments}],
//                      outputs: [string], answer, callTokens, answerTokens}
//
// The model reasons, calls two tools at once, then answers after their results. The
// SDK reads reasoning only from reasoning summaries, so the requests ask for
// reasoning.summary; forceReasoning tells the SDK that this (local) model reasons.
//
// Prints one line per passed check and exits non-zero on the first mismatch.
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, jsonSchema, stepCountIs, streamText, tool } from 'ai';
import { isDeepStrictEqual, inspect } from 'node:util';

class CheckError extends Error {}

function fail(label, message) {
  throw new CheckError(`FAIL ${label}: ${message}`);
}

function show(v) {
  return inspect(v, { depth: 8, breakLength: Infinity });
}

function eq(label, got, want) {
  if (!isDeepStrictEqual(got, want)) fail(label, `got ${show(got)}, want ${show(want)}`);
}

function pass(label) {
  console.log(`ok   ${label}`);
}

function requireEnv(name) {
  const v = process.env[name];
  if (!v) {
    console.error(`missing environment variable ${name}`);
    process.exit(2);
  }
  return v;
}

const base = requireEnv('HEARTH_BASE_URL');
const expect = JSON.parse(requireEnv('HEARTH_AI_EXPECT'));

// requests records every request body the SDK sends, to check what it sent back.
let requests = [];
const openai = createOpenAI({
  baseURL: base,
  apiKey: 'unused',
  fetch: async (url, init) => {
    if (init?.body) requests.push(JSON.parse(init.body));
    return fetch(url, init);
  },
});

// The tools record what they were called with and answer with the expected outputs.
let executed = [];
function makeTools() {
  const def = (name, description, prop, output) =>
    tool({
      description,
      inputSchema: jsonSchema({ type: 'object', properties: { [prop]: { type: 'string' } }, required: [prop] }),
      execute: async (input) => {
        executed.push({ name, input });
        return output;
      },
    });
  return {
    get_weather: def('get_weather', 'Weather in a city', 'city', expect.outputs[0]),
    get_time: def('get_time', 'Local time', 'timezone', expect.outputs[1]),
  };
}

const wantCalls = expect.calls.map((c) => ({ toolName: c.name, input: JSON.parse(c.arguments) }));

function options(store) {
  const openaiOptions = { forceReasoning: true, reasoningSummary: 'auto' };
  if (!store) openaiOptions.store = false;
  return {
    model: openai.responses(expect.model),
    prompt: expect.input,
    tools: makeTools(),
    stopWhen: stepCountIs(5),
    maxRetries: 0,
    providerOptions: { openai: openaiOptions },
  };
}

// checkSteps checks the two steps of a loop: reasoning (from the summary) and two calls
// with their results, then the answer; token counts exact.
function checkSteps(label, steps, text) {
  eq(`${label}: steps`, steps.length, 2);
  const [first, second] = steps;
  eq(`${label}: step 1 finish`, first.finishReason, 'tool-calls');
  eq(`${label}: step 1 reasoning`, first.reasoningText, expect.reasoning);
  eq(`${label}: step 1 calls`, first.toolCalls.map((c) => ({ toolName: c.toolName, input: c.input })), wantCalls);
  eq(`${label}: step 1 results`, first.toolResults.map((r) => r.output), expect.outputs);
  eq(`${label}: step 1 output tokens`, first.usage.outputTokens, expect.callTokens);
  eq(`${label}: step 2 finish`, second.finishReason, 'stop');
  eq(`${label}: step 2 text`, second.text, expect.answer);
  eq(`${label}: step 2 output tokens`, second.usage.outputTokens, expect.answerTokens);
  eq(`${label}: text`, text, expect.answer);
  eq(`${label}: tools executed`, executed.map((e) => ({ toolName: e.name, input: e.input })), wantCalls);
  pass(`${label}: two calls with their results, then the answer`);
}

// checkSent checks the SDK's second request: the earlier output by reference (store on)
// or spelled out (store off), and the tool results.
function checkSent(label, store) {
  eq(`${label}: requests`, requests.length, 2);
  const input = requests[1].input;
  const refs = input.filter((it) => it.type === 'item_reference');
  if (store && refs.length === 0) fail(label, `store on, but no item_reference in ${show(input)}`);
  if (!store && refs.length > 0) fail(label, `store off, but item_reference in ${show(input)}`);
  const outputs = input.filter((it) => it.type === 'function_call_output').map((it) => it.output);
  eq(`${label}: tool outputs sent`, outputs, expect.outputs);
  pass(`${label}: ${store ? `${refs.length} item references` : 'items spelled out'} and the tool outputs sent`);
}

// checkStored reads back what hearth stored as the input of the answering response:
// the references resolved to the items (reasoning, calls) and the tool outputs, so the
// model saw the tool results.
async function checkStored(label, responseId) {
  const r = await fetch(`${base}/responses/${responseId}/input_items?order=asc&limit=100`);
  if (!r.ok) fail(label, `input_items: ${r.status} ${await r.text()}`);
  const items = (await r.json()).data;
  if (items.some((it) => it.type === 'item_reference')) fail(label, `unresolved reference stored: ${show(items)}`);
  const reasoning = items.find((it) => it.type === 'reasoning');
  eq(`${label}: stored reasoning`, reasoning?.content?.[0]?.text, expect.reasoning);
  eq(
    `${label}: stored calls`,
    items.filter((it) => it.type === 'function_call').map((it) => ({ toolName: it.name, input: JSON.parse(it.arguments) })),
    wantCalls,
  );
  eq(`${label}: stored outputs`, items.filter((it) => it.type === 'function_call_output').map((it) => it.output), expect.outputs);
  pass(`${label}: the answering response's input holds the referenced items and the tool results`);
}

async function runGenerate(store) {
  requests = [];
  executed = [];
  const label = `generateText (store ${store ? 'on' : 'off'})`;
  const result = await generateText(options(store));
  checkSteps(label, result.steps, result.text);
  checkSent(label, store);
  if (store) await checkStored(label, result.response.id);
  return result.steps[1].usage.inputTokens;
}

async function runStream(store) {
  requests = [];
  executed = [];
  const label = `streamText (store ${store ? 'on' : 'off'})`;
  const result = streamText({ ...options(store), onError: ({ error }) => fail(label, show(error)) });
  let reasoning = '';
  let deltas = 0;
  let text = '';
  for await (const part of result.fullStream) {
    if (part.type === 'reasoning-delta') reasoning += part.text;
    if (part.type === 'text-delta') {
      text += part.text;
      deltas++;
    }
    if (part.type === 'error') fail(label, show(part.error));
  }
  eq(`${label}: streamed reasoning`, reasoning, expect.reasoning);
  if (deltas < 2) fail(label, `the answer came in ${deltas} delta(s), want it streamed`);
  checkSteps(label, await result.steps, text);
  checkSent(label, store);
  if (store) await checkStored(label, (await result.response).id);
  return (await result.steps)[1].usage.inputTokens;
}

try {
  const inputTokens = {};
  inputTokens['generate on'] = await runGenerate(true);
  inputTokens['generate off'] = await runGenerate(false);
  inputTokens['stream on'] = await runStream(true);
  inputTokens['stream off'] = await runStream(false);
  // The answering step's prompt is the same conversation every way: the references
  // resolved to exactly the items sent when store is off.
  const counts = new Set(Object.values(inputTokens));
  if (counts.size !== 1) fail('input tokens of the answering step', show(inputTokens));
  pass(`the answering step has ${[...counts][0]} input tokens every way`);
} catch (e) {
  if (e instanceof CheckError) {
    console.error(e.message);
    process.exit(1);
  }
  throw e;
}
