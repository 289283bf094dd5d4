// End-to-end check of hearth with the official `openai` npm package: a real client's
// `responses.create` and `responses.stream(...).finalResponse()` against script models.
//
// Run by server/openai_sdk_e2e_test.go, which starts hearth and passes everything this
// script expects through the environment (nothing about the models is hard-coded here):
//
//   OPENAI_BASE_URL         hearth's base URL, e.g. http://127.0.0.1:PORT/v1
//   OPENAI_API_KEY          any value (hearth runs without auth in the test)
//   HEARTH_SDK_EXPECT       JSON: {
//     plain:     {model, text},                     // plain text model
//     reasoning: {model, reasoning, text},          // reasoning then text
//     tools:     {model, input, tools, calls: [{name, arguments}], outputs: [string], answer}
//     custom:    {model, input, tools, call: {name, input}, output, answer}   // a custom tool
//   }
//
// Prints one line per passed check and exits non-zero on the first mismatch.
import OpenAI from 'openai';
import { VERSION } from 'openai/version';
import { accumulateResponse } from 'openai/lib/responses/ResponseAccumulator';
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

function requireEnv(name) {
  const v = process.env[name];
  if (!v) {
    console.error(`missing environment variable ${name}`);
    process.exit(2);
  }
  return v;
}

const expect = JSON.parse(requireEnv('HEARTH_SDK_EXPECT'));
requireEnv('OPENAI_BASE_URL');
const client = new OpenAI({ maxRetries: 0, timeout: 120_000 });

// checkCompleted: status completed and integer usage that adds up.
function checkCompleted(label, r) {
  eq(`${label}: status`, r.status, 'completed');
  const u = r.usage;
  if (!u) fail(label, `no usage in ${show(r)}`);
  for (const k of ['input_tokens', 'output_tokens', 'total_tokens']) {
    if (!Number.isInteger(u[k]) || u[k] < 0) fail(label, `usage.${k} = ${show(u[k])}, want a non-negative integer`);
  }
  if (u.output_tokens <= 0 || u.input_tokens <= 0) fail(label, `usage ${show(u)}: want input and output tokens`);
  eq(`${label}: usage.total_tokens`, u.total_tokens, u.input_tokens + u.output_tokens);
}

// messageText joins the output_text parts of the response's message items.
function messageText(r) {
  return r.output
    .filter((it) => it.type === 'message')
    .flatMap((it) => it.content)
    .filter((p) => p.type === 'output_text')
    .map((p) => p.text)
    .join('');
}

// checkOnlyMessage: the output is exactly one completed assistant message with text want.
function checkOnlyMessage(label, r, want) {
  eq(`${label}: output item types`, r.output.map((it) => it.type), ['message']);
  const m = r.output[0];
  eq(`${label}: message role`, m.role, 'assistant');
  eq(`${label}: message status`, m.status, 'completed');
  eq(`${label}: message text`, messageText(r), want);
  eq(`${label}: output_text`, r.output_text, want);
}

// checkCalls: reasoning (optional) then exactly the expected function calls, in order.
function checkCalls(label, r, want) {
  const calls = r.output.filter((it) => it.type === 'function_call');
  const others = r.output.filter((it) => it.type !== 'function_call' && it.type !== 'reasoning');
  if (others.length) fail(label, `unexpected output items ${show(others)}`);
  eq(`${label}: function call names`, calls.map((c) => c.name), want.map((c) => c.name));
  for (const [i, c] of calls.entries()) {
    if (typeof c.arguments !== 'string') fail(label, `call ${i} arguments is ${show(c.arguments)}, want a JSON string`);
    let args;
    try {
      args = JSON.parse(c.arguments);
    } catch (e) {
      fail(label, `call ${c.name} arguments ${show(c.arguments)} are not JSON: ${e.message}`);
    }
    eq(`${label}: ${c.name} arguments`, args, JSON.parse(want[i].arguments));
    if (!c.call_id) fail(label, `call ${c.name} has no call_id`);
    eq(`${label}: ${c.name} status`, c.status, 'completed');
  }
  if (new Set(calls.map((c) => c.call_id)).size !== calls.length) fail(label, `call_ids not distinct: ${show(calls)}`);
  return calls;
}

// checkCustomCall: the output is exactly one completed custom_tool_call with the
// expected name and raw input.
function checkCustomCall(label, r, want) {
  eq(`${label}: output item types`, r.output.map((it) => it.type), ['custom_tool_call']);
  const c = r.output[0];
  eq(`${label}: custom tool name`, c.name, want.name);
  eq(`${label}: custom tool input`, c.input, want.input);
  eq(`${label}: custom tool call status`, c.status, 'completed');
  if (!c.call_id) fail(label, `custom tool call has no call_id: ${show(c)}`);
  return c;
}

function outputsFor(calls, outputs) {
  return calls.map((c, i) => ({ type: 'function_call_output', call_id: c.call_id, output: outputs[i] }));
}

// streamAll consumes a responses.stream through its event iterator, then returns the
// final response and the events seen. When the SDK's stream helper throws, it replays
// the request as a raw stream to say which event the SDK rejected.
async function streamAll(params) {
  try {
    const stream = client.responses.stream(params);
    const events = [];
    for await (const event of stream) {
      events.push(event);
    }
    const final = await stream.finalResponse();
    return { final, events };
  } catch (e) {
    if (!(e instanceof CheckError)) {
      e.message += await diagnose(params);
    }
    throw e;
  }
}

// diagnose sends params again as a raw stream (client.responses.create with stream:
// true, which does not accumulate) and feeds the events one by one to the SDK's
// accumulateResponse, reporting the event types seen and the events it rejects.
async function diagnose(params) {
  const lines = [];
  try {
    const raw = await client.responses.create({ ...params, stream: true });
    let snapshot;
    const types = [];
    const rejected = new Map(); // type -> {count, event, message} of the first rejection
    for await (const event of raw) {
      if (!types.includes(event.type)) types.push(event.type);
      try {
        snapshot = accumulateResponse(event, snapshot);
      } catch (err) {
        const r = rejected.get(event.type) ?? { count: 0, event, message: err.message };
        r.count++;
        rejected.set(event.type, r);
      }
    }
    lines.push(`  raw stream event types, in order of first appearance: ${types.join(', ')}`);
    for (const [type, r] of rejected) {
      const shown = JSON.stringify(r.event);
      lines.push(`  the SDK rejects ${JSON.stringify(type)} (${r.count} event(s)): ${r.message}; first: ${shown.length > 400 ? shown.slice(0, 400) + '...' : shown}`);
    }
    if (rejected.size === 0) lines.push('  the SDK accumulator accepts every event of the raw stream one by one');
  } catch (err) {
    lines.push(`  (replaying the request as a raw stream failed too: ${err.message})`);
  }
  return '\n' + lines.join('\n');
}

// checkDeltas: the deltas of type typ add up, per item, to what the final response says.
function checkDeltas(label, events, typ, final, pick) {
  const got = new Map();
  for (const e of events) {
    if (e.type !== typ) continue;
    got.set(e.item_id, (got.get(e.item_id) ?? '') + e.delta);
  }
  const want = new Map();
  for (const it of final.output) {
    const v = pick(it);
    if (v !== undefined) want.set(it.id, v);
  }
  if (want.size === 0) fail(label, `final response has nothing to compare ${typ} against`);
  eq(`${label}: ${typ} per item`, Object.fromEntries(got), Object.fromEntries(want));
}

function eventTypes(events) {
  return [...new Set(events.map((e) => e.type))];
}

const checks = [
  ['create: plain text', async () => {
    const { model, text } = expect.plain;
    const r = await client.responses.create({ model, input: 'hi' });
    checkCompleted('create plain', r);
    checkOnlyMessage('create plain', r, text);
    eq('create plain: model', r.model, model);
  }],

  ['stream: reasoning then text (finalResponse + event iterator)', async () => {
    const { model, reasoning, text } = expect.reasoning;
    const { final, events } = await streamAll({ model, input: 'hello' });
    const types = eventTypes(events);
    for (const t of ['response.created', 'response.output_item.added', 'response.output_text.delta', 'response.output_item.done', 'response.completed']) {
      if (!types.includes(t)) fail('stream reasoning', `no ${t} event among ${show(types)}`);
    }
    eq('stream reasoning: last event', events.at(-1).type, 'response.completed');
    checkCompleted('stream reasoning', final);
    eq('stream reasoning: output item types', final.output.map((it) => it.type), ['reasoning', 'message']);
    const r0 = final.output[0];
    const rtext = (r0.content ?? []).filter((p) => p.type === 'reasoning_text').map((p) => p.text).join('');
    eq('stream reasoning: reasoning_text', rtext, reasoning);
    eq('stream reasoning: message text', messageText(final), text);
    eq('stream reasoning: output_text', final.output_text, text);
    const deltas = events.filter((e) => e.type === 'response.output_text.delta');
    if (deltas.length < 2) fail('stream reasoning', `text came in ${deltas.length} delta(s); expected it streamed`);
    eq('stream reasoning: output_text deltas joined', deltas.map((e) => e.delta).join(''), text);
    checkDeltas('stream reasoning', events, 'response.output_text.delta', final,
      (it) => (it.type === 'message' ? it.content.map((p) => p.text).join('') : undefined));
  }],

  ['stream: reasoning with reasoning.summary (the summary events, accumulated by the SDK)', async () => {
    const { model, reasoning, text } = expect.reasoning;
    const { final, events } = await streamAll({ model, input: 'hello', reasoning: { summary: 'auto' } });
    checkCompleted('stream summary', final);
    const r0 = final.output[0];
    eq('stream summary: summary', r0.summary, [{ type: 'summary_text', text: reasoning }]);
    eq('stream summary: reasoning_text', (r0.content ?? []).map((p) => p.text).join(''), reasoning);
    eq('stream summary: message text', messageText(final), text);
    const added = events.findIndex((e) => e.type === 'response.output_item.added');
    eq('stream summary: event after output_item.added', events[added + 1].type, 'response.reasoning_summary_part.added');
    checkDeltas('stream summary', events, 'response.reasoning_summary_text.delta', final,
      (it) => (it.type === 'reasoning' ? it.summary.map((p) => p.text).join('') : undefined));
  }],

  ['create: two function calls, then the answer with previous_response_id', async () => {
    const { model, input, tools, calls, outputs, answer } = expect.tools;
    const first = await client.responses.create({ model, input, tools });
    checkCompleted('create tools turn 1', first);
    const got = checkCalls('create tools turn 1', first, calls);
    const second = await client.responses.create({
      model,
      tools,
      previous_response_id: first.id,
      input: outputsFor(got, outputs),
    });
    checkCompleted('create tools turn 2', second);
    checkOnlyMessage('create tools turn 2', second, answer);
    eq('create tools turn 2: previous_response_id', second.previous_response_id, first.id);
  }],

  ['stream: two function calls, then the answer with previous_response_id', async () => {
    const { model, input, tools, calls, outputs, answer } = expect.tools;
    const one = await streamAll({ model, input, tools });
    checkCompleted('stream tools turn 1', one.final);
    const got = checkCalls('stream tools turn 1', one.final, calls);
    checkDeltas('stream tools turn 1', one.events, 'response.function_call_arguments.delta', one.final,
      (it) => (it.type === 'function_call' ? it.arguments : undefined));
    const two = await streamAll({
      model,
      tools,
      previous_response_id: one.final.id,
      input: outputsFor(got, outputs),
    });
    checkCompleted('stream tools turn 2', two.final);
    checkOnlyMessage('stream tools turn 2', two.final, answer);
    eq('stream tools turn 2: output_text deltas joined',
      two.events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join(''), answer);
  }],

  ['create: a custom tool call, then the answer to its custom_tool_call_output', async () => {
    const { model, input, tools, call, output, answer } = expect.custom;
    const first = await client.responses.create({ model, input, tools });
    checkCompleted('create custom turn 1', first);
    const c = checkCustomCall('create custom turn 1', first, call);
    const second = await client.responses.create({
      model,
      tools,
      previous_response_id: first.id,
      input: [{ type: 'custom_tool_call_output', call_id: c.call_id, output }],
    });
    checkCompleted('create custom turn 2', second);
    checkOnlyMessage('create custom turn 2', second, answer);
  }],

  ['stream: a custom tool call (custom_tool_call_input events), then the answer from the whole history (store: false)', async () => {
    const { model, input, tools, call, output, answer } = expect.custom;
    const one = await streamAll({ model, input, tools, store: false });
    checkCompleted('stream custom turn 1', one.final);
    const c = checkCustomCall('stream custom turn 1', one.final, call);
    checkDeltas('stream custom turn 1', one.events, 'response.custom_tool_call_input.delta', one.final,
      (it) => (it.type === 'custom_tool_call' ? it.input : undefined));
    const done = one.events.filter((e) => e.type === 'response.custom_tool_call_input.done');
    eq('stream custom turn 1: custom_tool_call_input.done inputs', done.map((e) => e.input), [call.input]);
    const two = await streamAll({
      model,
      tools,
      store: false,
      input: [
        { role: 'user', content: input },
        c,
        { type: 'custom_tool_call_output', call_id: c.call_id, output },
      ],
    });
    checkCompleted('stream custom turn 2', two.final);
    checkOnlyMessage('stream custom turn 2', two.final, answer);
  }],
];

let failed = 0;
for (const [label, run] of checks) {
  try {
    await run();
    pass(label);
  } catch (e) {
    failed++;
    if (e instanceof CheckError) {
      console.error(e.message);
    } else {
      // An error thrown by the SDK itself: the client rejected what hearth sent.
      console.error(`FAIL ${label}: the openai SDK threw ${e?.constructor?.name ?? 'an error'}: ${e?.message}`);
      if (e?.status !== undefined) console.error(`  HTTP status ${e.status}, body ${show(e.error)}`);
      const frames = String(e?.stack ?? '').split('\n').filter((l) => l.trim().startsWith('at '));
      if (frames.length) console.error(frames.join('\n'));
    }
  }
}
if (failed) {
  console.error(`${failed} of ${checks.length} checks failed (openai ${VERSION})`);
  process.exit(1);
}
console.log(`all ${checks.length} checks passed (openai ${VERSION}, node ${process.version})`);
