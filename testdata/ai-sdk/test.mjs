// End-to-end check of hearth with the Vercel AI SDK (`ai` with `@ai-sdk/openai`'s
// `openai.responses(model)` provider): multi-step tool loops with generateText and
// streamText, with store on (the SDK then sends earlier output back as item_reference
// items) and off (it sends the items, reasoning sealed in encrypted_content).
//
// Run by server/ai_sdk_e2e_test.go, which starts hearth and passes everything this
// script expects through the environment (nothing about the models is hard-coded here):
//
//   HEARTH_BASE_URL    hearth's base URL, e.g. http://127.0.0.1:PORT/v1
//   HEARTH_AI_EXPECT   JSON: {outputs: {toolName: output}, scenarios: [{name, model, input,
//                      steps: [{reasoning, calls: [{name, arguments}], tokens}],
//                      answer, answerTokens}]}
//
// In each scenario the model reasons and calls tools for a number of steps (two calls
// at once in one step, or one call per step), then answers after the results. The SDK
// reads reasoning only from reasoning summaries, so the requests ask for
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
  const def = (name, description, prop) =>
    tool({
      description,
      inputSchema: jsonSchema({ type: 'object', properties: { [prop]: { type: 'string' } }, required: [prop] }),
      execute: async (input) => {
        executed.push({ toolName: name, input });
        return expect.outputs[name];
      },
    });
  return {
    get_weather: def('get_weather', 'Weather in a city', 'city'),
    get_time: def('get_time', 'Local time', 'timezone'),
  };
}

const callsOf = (step) => step.calls.map((c) => ({ toolName: c.name, input: JSON.parse(c.arguments) }));

function options(sc, store) {
  const openaiOptions = { forceReasoning: true, reasoningSummary: 'auto' };
  if (!store) openaiOptions.store = false;
  return {
    model: openai.responses(sc.model),
    prompt: sc.input,
    tools: makeTools(),
    stopWhen: stepCountIs(5),
    maxRetries: 0,
    providerOptions: { openai: openaiOptions },
  };
}

// checkSteps checks each calling step (reasoning from the summary, the calls and their
// results), then the answering step; token counts exact.
function checkSteps(label, sc, steps, text) {
  eq(`${label}: steps`, steps.length, sc.steps.length + 1);
  sc.steps.forEach((want, i) => {
    const got = steps[i];
    const l = `${label}: step ${i + 1}`;
    eq(`${l} finish`, got.finishReason, 'tool-calls');
    eq(`${l} reasoning`, got.reasoningText, want.reasoning);
    eq(`${l} calls`, got.toolCalls.map((c) => ({ toolName: c.toolName, input: c.input })), callsOf(want));
    eq(`${l} results`, got.toolResults.map((r) => r.output), want.calls.map((c) => expect.outputs[c.name]));
    eq(`${l} output tokens`, got.usage.outputTokens, want.tokens);
  });
  const last = steps.at(-1);
  eq(`${label}: last step finish`, last.finishReason, 'stop');
  eq(`${label}: last step text`, last.text, sc.answer);
  eq(`${label}: last step output tokens`, last.usage.outputTokens, sc.answerTokens);
  eq(`${label}: text`, text, sc.answer);
  eq(`${label}: tools executed`, executed, sc.steps.flatMap(callsOf));
  pass(`${label}: ${sc.steps.length} calling step(s) with their results, then the answer`);
}

// checkSent checks the SDK's last request: the earlier output by reference (store on)
// or spelled out (store off), and every tool result.
function checkSent(label, sc, store) {
  eq(`${label}: requests`, requests.length, sc.steps.length + 1);
  const input = requests.at(-1).input;
  const refs = input.filter((it) => it.type === 'item_reference');
  if (store && refs.length === 0) fail(label, `store on, but no item_reference in ${show(input)}`);
  if (!store && refs.length > 0) fail(label, `store off, but item_reference in ${show(input)}`);
  const outputs = input.filter((it) => it.type === 'function_call_output').map((it) => it.output);
  eq(`${label}: tool outputs sent`, outputs, sc.steps.flatMap((st) => st.calls.map((c) => expect.outputs[c.name])));
  pass(`${label}: ${store ? `${refs.length} item reference(s)` : 'items spelled out'} and the tool outputs sent`);
}

// checkStored reads back what hearth stored as the input of the answering response:
// the references resolved to the items (reasoning, calls) and the tool outputs, so the
// model saw the tool results.
async function checkStored(label, sc, responseId) {
  const r = await fetch(`${base}/responses/${responseId}/input_items?order=asc&limit=100`);
  if (!r.ok) fail(label, `input_items: ${r.status} ${await r.text()}`);
  const items = (await r.json()).data;
  if (items.some((it) => it.type === 'item_reference')) fail(label, `unresolved reference stored: ${show(items)}`);
  eq(
    `${label}: stored reasoning`,
    items.filter((it) => it.type === 'reasoning').map((it) => it.content?.[0]?.text),
    sc.steps.map((st) => st.reasoning),
  );
  eq(
    `${label}: stored calls`,
    items.filter((it) => it.type === 'function_call').map((it) => ({ toolName: it.name, input: JSON.parse(it.arguments) })),
    sc.steps.flatMap(callsOf),
  );
  eq(
    `${label}: stored outputs`,
    items.filter((it) => it.type === 'function_call_output').map((it) => it.output),
    sc.steps.flatMap((st) => st.calls.map((c) => expect.outputs[c.name])),
  );
  pass(`${label}: the answering response's input holds the referenced items and the tool results`);
}

async function runGenerate(sc, store) {
  requests = [];
  executed = [];
  const label = `${sc.name}: generateText (store ${store ? 'on' : 'off'})`;
  const result = await generateText(options(sc, store));
  checkSteps(label, sc, result.steps, result.text);
  checkSent(label, sc, store);
  if (store) await checkStored(label, sc, result.response.id);
  return result.steps.at(-1).usage.inputTokens;
}

async function runStream(sc, store) {
  requests = [];
  executed = [];
  const label = `${sc.name}: streamText (store ${store ? 'on' : 'off'})`;
  const result = streamText({ ...options(sc, store), onError: ({ error }) => fail(label, show(error)) });
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
  eq(`${label}: streamed reasoning`, reasoning, sc.steps.map((st) => st.reasoning).join(''));
  if (deltas < 2) fail(label, `the answer came in ${deltas} delta(s), want it streamed`);
  const steps = await result.steps;
  checkSteps(label, sc, steps, text);
  checkSent(label, sc, store);
  if (store) await checkStored(label, sc, (await result.response).id);
  return steps.at(-1).usage.inputTokens;
}

try {
  for (const sc of expect.scenarios) {
    const inputTokens = {};
    inputTokens['generate on'] = await runGenerate(sc, true);
    inputTokens['generate off'] = await runGenerate(sc, false);
    inputTokens['stream on'] = await runStream(sc, true);
    inputTokens['stream off'] = await runStream(sc, false);
    // The answering step's prompt is the same conversation every way: the references
    // resolved to exactly the items sent when store is off.
    const counts = new Set(Object.values(inputTokens));
    if (counts.size !== 1) fail(`${sc.name}: input tokens of the answering step`, show(inputTokens));
    pass(`${sc.name}: the answering step has ${[...counts][0]} input tokens every way`);
  }
} catch (e) {
  if (e instanceof CheckError) {
    console.error(e.message);
    process.exit(1);
  }
  throw e;
}
