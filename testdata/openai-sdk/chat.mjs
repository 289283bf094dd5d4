// End-to-end check of hearth's Chat Completions with the official `openai` npm
// package: chat.completions.create, a stream, a tool loop and chat.completions.parse
// with a JSON schema, against script models.
//
// Run by server/openai_sdk_chat_e2e_test.go, which starts hearth and passes what this
// script expects through the environment:
//
//   OPENAI_BASE_URL     hearth's base URL, e.g. http://127.0.0.1:PORT/v1
//   OPENAI_API_KEY      any value (hearth runs without auth in the test)
//   HEARTH_SDK_EXPECT   JSON: {
//     plain: {model, text, completionTokens},
//     tools: {model, tools, calls: [{name, arguments}], outputs: [string], answer},
//     parse: {model},
//   }
//
// Prints one line per passed check and exits non-zero on the first mismatch.
import OpenAI from 'openai';
import { isDeepStrictEqual, inspect } from 'node:util';

class CheckError extends Error {}

function fail(label, message) {
  throw new CheckError(`FAIL ${label}: ${message}`);
}

function show(v) {
  return inspect(v, { depth: 6, breakLength: Infinity });
}

function eq(label, got, want) {
  if (!isDeepStrictEqual(got, want)) {
    fail(label, `got ${show(got)}, want ${show(want)}`);
  }
}

function pass(label) {
  console.log(`ok   ${label}`);
}

const expect = JSON.parse(process.env.HEARTH_SDK_EXPECT ?? 'null');
if (!expect || !process.env.OPENAI_BASE_URL) {
  console.error('missing HEARTH_SDK_EXPECT or OPENAI_BASE_URL');
  process.exit(2);
}
const client = new OpenAI({ maxRetries: 0, timeout: 120_000 });

async function create() {
  const { model, text, completionTokens } = expect.plain;
  const c = await client.chat.completions.create({
    model,
    messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hi' }],
  });
  eq('create: object', c.object, 'chat.completion');
  eq('create: content', c.choices[0].message.content, text);
  eq('create: finish_reason', c.choices[0].finish_reason, 'stop');
  eq('create: completion_tokens', c.usage.completion_tokens, completionTokens);
  eq('create: total_tokens', c.usage.total_tokens, c.usage.prompt_tokens + c.usage.completion_tokens);
  if (c.system_fingerprint === 'fp_ollama') fail('create', 'answered by the runtime, not hearth');
  pass('chat.completions.create');
}

async function stream() {
  const { model, text, completionTokens } = expect.plain;
  const s = await client.chat.completions.create({
    model,
    messages: [{ role: 'user', content: 'hi' }],
    stream: true,
    stream_options: { include_usage: true },
  });
  let content = '';
  let finish = null;
  let usage = null;
  let first = true;
  for await (const chunk of s) {
    if (first) {
      eq('stream: first delta role', chunk.choices[0]?.delta?.role, 'assistant');
      first = false;
    }
    for (const ch of chunk.choices) {
      content += ch.delta.content ?? '';
      if (ch.finish_reason) finish = ch.finish_reason;
    }
    if (chunk.usage) usage = chunk.usage;
  }
  eq('stream: content', content, text);
  eq('stream: finish_reason', finish, 'stop');
  eq('stream: usage.completion_tokens', usage?.completion_tokens, completionTokens);
  // The SDK's own accumulation of a stream.
  const runner = client.chat.completions.stream({ model, messages: [{ role: 'user', content: 'hi' }] });
  const final = await runner.finalChatCompletion();
  eq('stream(): final content', final.choices[0].message.content, text);
  pass('chat.completions stream');
}

async function toolLoop() {
  const { model, tools, calls, outputs, answer } = expect.tools;
  const messages = [{ role: 'user', content: 'weather and time in Paris?' }];
  const first = await client.chat.completions.create({ model, messages, tools });
  const msg = first.choices[0].message;
  eq('tools: finish_reason', first.choices[0].finish_reason, 'tool_calls');
  eq('tools: calls', msg.tool_calls.map((c) => ({ name: c.function.name, arguments: c.function.arguments })), calls);
  messages.push(msg);
  msg.tool_calls.forEach((c, i) => messages.push({ role: 'tool', tool_call_id: c.id, content: outputs[i] }));
  const second = await client.chat.completions.create({ model, messages, tools });
  eq('tools: answer', second.choices[0].message.content, answer);
  eq('tools: answer finish_reason', second.choices[0].finish_reason, 'stop');
  // The same calls streamed, as the SDK's stream helper accumulates them.
  const runner = client.chat.completions.stream({ model, messages: messages.slice(0, 1), tools });
  const final = await runner.finalChatCompletion();
  eq('tools: streamed calls', final.choices[0].message.tool_calls.map((c) => ({ name: c.function.name, arguments: c.function.arguments })), calls);
  pass('chat.completions tool loop');
}

async function parse() {
  const { model } = expect.parse;
  const c = await client.chat.completions.parse({
    model,
    temperature: 0,
    max_tokens: 200,
    messages: [{ role: 'user', content: 'hi' }],
    response_format: {
      type: 'json_schema',
      json_schema: {
        name: 'greeting',
        strict: true,
        schema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'], additionalProperties: false },
      },
    },
  });
  const parsed = c.choices[0].message.parsed;
  if (!parsed || typeof parsed.ok !== 'boolean' || Object.keys(parsed).length !== 1) {
    fail('parse', `parsed ${show(parsed)} from ${show(c.choices[0].message.content)}`);
  }
  pass('chat.completions.parse');
}

async function errors() {
  try {
    await client.chat.completions.create({ model: expect.plain.model, messages: [{ role: 'user', content: 'hi' }], n: 2 });
    fail('n=2', 'accepted');
  } catch (e) {
    if (e instanceof CheckError) throw e;
    eq('n=2: status', e.status, 400);
    eq('n=2: param', e.param, 'n');
  }
  pass('errors');
}

try {
  await create();
  await stream();
  await toolLoop();
  await parse();
  await errors();
} catch (e) {
  console.error(e instanceof CheckError ? e.message : e);
  process.exit(1);
}
