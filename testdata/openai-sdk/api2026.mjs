// End-to-end check of the 2026 Responses shapes with the official `openai` npm package:
// logprobs, tool_search over deferred tools (hosted and client-executed), server-side
// compaction (context_management) and web_search through hearth's MCP search, each
// through responses.create and responses.stream, compared with what hearth answered to
// the same request over plain HTTP; then two of them on two lanes (stream_id) of one
// socket of the client's Responses WebSocket mode.
//
// Run by server/openai_sdk_2026_e2e_test.go (TestOpenAISDK2026E2E), which passes:
//
//   OPENAI_BASE_URL     hearth's base URL, e.g. http://127.0.0.1:PORT/v1
//   OPENAI_API_KEY      a key hearth accepts
//   HEARTH_2026_EXPECT  the path of a JSON file: {logprobs, toolSearch, webSearch: ref,
//                       toolSearchClient: {call: ref, next: ref, loaded: tool},
//                       compaction: {first: ref, second: ref, third: ref}}, where a ref is
//                       {params, response, events?}: a request's body, hearth's JSON
//                       response to it over plain HTTP and, when present, the events of
//                       the same request streamed
//
// Outputs are compared with their items' ids and call ids named by index (ID0, CALL0)
// and sealed compaction content set aside, as every run seals it anew. Prints one line
// per passed check and exits non-zero on the first mismatch.
import OpenAI from 'openai';
import { ResponsesWS } from 'openai/resources/beta/responses/ws';
import { readFileSync } from 'node:fs';
import { isDeepStrictEqual, inspect } from 'node:util';

class CheckError extends Error {}

function eq(label, got, want) {
  if (!isDeepStrictEqual(got, want)) {
    throw new CheckError(
      `FAIL ${label}: got ${inspect(got, { depth: 8, breakLength: Infinity })}, want ${inspect(want, { depth: 8, breakLength: Infinity })}`,
    );
  }
  console.log(`ok   ${label}`);
}

const expectPath = process.env.HEARTH_2026_EXPECT;
if (!expectPath || !process.env.OPENAI_BASE_URL) {
  console.error('missing HEARTH_2026_EXPECT or OPENAI_BASE_URL');
  process.exit(2);
}
const expect = JSON.parse(readFileSync(expectPath, 'utf8'));
const client = new OpenAI({ maxRetries: 0 });

// sortKeys is v with its objects' keys sorted, so that JSON text compares by value.
function sortKeys(v) {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === 'object') {
    return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sortKeys(v[k])]));
  }
  return v;
}

// normalize is an output with ids named by index and sealed compaction content set
// aside (after checking there is some).
function normalize(label, output) {
  const masked = output.map((it) => {
    if (it.type !== 'compaction') return it;
    if (typeof it.encrypted_content !== 'string' || it.encrypted_content === '') {
      throw new CheckError(`FAIL ${label}: a compaction item without its sealed content: ${inspect(it)}`);
    }
    return { ...it, encrypted_content: 'SEALED' };
  });
  let s = JSON.stringify(sortKeys(masked));
  output.forEach((it, i) => {
    if (it.id) s = s.replaceAll(it.id, `ID${i}`);
    if (it.call_id) s = s.replaceAll(it.call_id, `CALL${i}`);
  });
  return JSON.parse(s);
}

const tokens = (u) => u && { input_tokens: u.input_tokens, output_tokens: u.output_tokens, total_tokens: u.total_tokens };

const outputText = (r) =>
  r.output.filter((it) => it.type === 'message')
    .flatMap((it) => it.content)
    .filter((c) => c.type === 'output_text')
    .map((c) => c.text)
    .join('');

// sameResponse checks a response the client got against hearth's over plain HTTP.
function sameResponse(label, got, want) {
  eq(`${label}: status`, got.status, want.status);
  eq(`${label}: output`, normalize(label, got.output), normalize(`${label} reference`, want.output));
  eq(`${label}: output_text`, got.output_text ?? outputText(got), outputText(want));
  eq(`${label}: usage`, tokens(got.usage), tokens(want.usage));
}

// collapse is the event types with runs of one type (deltas) written once.
function collapse(events) {
  const out = [];
  for (const e of events) if (out.at(-1) !== e.type) out.push(e.type);
  return out;
}

async function streamed(params) {
  const stream = client.responses.stream(params);
  const events = [];
  for await (const e of stream) events.push(e);
  return { events, final: await stream.finalResponse() };
}

// unparsed is a response without what the stream helper's parsing adds (for
// text.format and strict tools): `parsed: null` on every output_text and
// `parsed_arguments: null` on every function_call. hearth never sends them.
function unparsed(r) {
  const none = (label, v) => {
    if (v !== null && v !== undefined) throw new CheckError(`FAIL ${label} ${inspect(v)}: nothing asked for parsing`);
  };
  const output = r.output.map((it) => {
    if (it.type === 'function_call') {
      const { parsed_arguments, ...call } = it;
      none('parsed_arguments', parsed_arguments);
      return call;
    }
    if (it.type !== 'message') return it;
    return {
      ...it,
      content: it.content.map(({ parsed, ...part }) => {
        none('parsed', parsed);
        return part;
      }),
    };
  });
  return { ...r, output };
}

// sameStream checks a stream the client read against the reference's events.
function sameStream(label, got, ref) {
  eq(`${label}: events`, collapse(got.events), collapse(ref.events));
  sameResponse(`${label}: finalResponse`, unparsed(got.final), ref.events.at(-1).response);
}

const deltaLogprobs = (events) =>
  events.filter((e) => e.type === 'response.output_text.delta').flatMap((e) => e.logprobs);

async function logprobs() {
  const ref = expect.logprobs;
  const want = ref.response.output.find((it) => it.type === 'message').content[0].logprobs;
  const r = await client.responses.create(ref.params);
  sameResponse('logprobs: responses.create', r, ref.response);
  const got = r.output.find((it) => it.type === 'message').content[0].logprobs;
  eq('logprobs: output_text.logprobs, token by token', got, want);
  eq('logprobs: the fields of a token', Object.keys(got[0]).sort(), ['bytes', 'logprob', 'token', 'top_logprobs']);
  eq('logprobs: top_logprobs per token', got.map((lp) => lp.top_logprobs.length), got.map(() => 3));
  const stored = await client.responses.retrieve(r.id);
  eq('logprobs: responses.retrieve', stored.output[0].content[0].logprobs, want);

  const s = await streamed(ref.params);
  sameStream('logprobs: responses.stream', s, ref);
  eq('logprobs: the deltas carry the tokens', deltaLogprobs(s.events), deltaLogprobs(ref.events));
  for (const e of s.events.filter((e) => e.type === 'response.output_text.delta')) {
    if (e.logprobs.map((lp) => lp.token).join('').trim() !== e.delta.trim()) {
      throw new CheckError(`FAIL logprobs: delta ${inspect(e.delta)} carries the tokens of ${inspect(e.logprobs)}`);
    }
  }
  console.log('ok   logprobs: each delta spells its tokens');
}

async function toolSearch() {
  const ref = expect.toolSearch;
  const r = await client.responses.create(ref.params);
  sameResponse('tool_search: responses.create', r, ref.response);
  eq('tool_search: items', r.output.map((it) => it.type), ['tool_search_call', 'tool_search_output', 'function_call']);
  eq('tool_search: the output answers the call', r.output[1].call_id, r.output[0].call_id);
  eq('tool_search: loaded and called', [r.output[1].tools.map((t) => t.name), r.output[2].name], [['get_weather'], 'get_weather']);
  sameStream('tool_search: responses.stream', await streamed(ref.params), ref);

  // The client runs the search: the call ends the response; the client's
  // tool_search_output, sent with previous_response_id, loads the tool it names.
  const c = expect.toolSearchClient;
  const call = await client.responses.create(c.call.params);
  sameResponse('tool_search client: the call', call, c.call.response);
  eq('tool_search client: execution', [call.output[0].type, call.output[0].execution], ['tool_search_call', 'client']);
  const output = { type: 'tool_search_output', call_id: call.output[0].call_id, execution: 'client', tools: [c.loaded] };
  const next = await client.responses.create({ ...c.next.params, previous_response_id: call.id, input: [output] });
  sameResponse('tool_search client: after its tool_search_output', next, c.next.response);
  eq('tool_search client: the loaded tool is called', next.output.map((it) => [it.type, it.name]), [['function_call', 'get_weather']]);
}

async function compaction() {
  const c = expect.compaction;
  const r1 = await client.responses.create(c.first.params);
  sameResponse('compaction: under the threshold', r1, c.first.response);
  const second = { ...c.second.params, previous_response_id: r1.id };
  const r2 = await client.responses.create(second);
  sameResponse('compaction: over the threshold', r2, c.second.response);
  eq('compaction: output[0]', r2.output.map((it) => it.type), ['compaction', 'message']);
  const r3 = await client.responses.create({ ...c.third.params, previous_response_id: r2.id });
  sameResponse('compaction: the turn after it', r3, c.third.response);

  const s = await streamed(second);
  sameStream('compaction: responses.stream', s, c.second);
  const added = s.events.find((e) => e.type === 'response.output_item.added');
  eq('compaction: announced first', [added.output_index, added.item.type], [0, 'compaction']);
}

async function webSearch() {
  const ref = expect.webSearch;
  const r = await client.responses.create(ref.params);
  sameResponse('web_search: responses.create', r, ref.response);
  eq('web_search: items', r.output.map((it) => it.type), ['web_search_call', 'message']);
  const call = r.output[0];
  eq('web_search: the call', [call.status, call.action.type, call.action.query], ['completed', 'search', ref.response.output[0].action.query]);
  eq('web_search: sources', call.action.sources, ref.response.output[0].action.sources);
  const annotations = r.output[1].content[0].annotations;
  eq('web_search: url_citation', annotations.map((a) => a.type), ['url_citation']);

  const s = await streamed(ref.params);
  sameStream('web_search: responses.stream', s, ref);
  const added = (events) => events.filter((e) => e.type === 'response.output_text.annotation.added').map((e) => e.annotation);
  eq('web_search: annotation.added', added(s.events), annotations);
  eq('web_search: the search events', collapse(s.events).filter((t) => t.startsWith('response.web_search_call.')), [
    'response.web_search_call.in_progress',
    'response.web_search_call.searching',
    'response.web_search_call.completed',
  ]);
}

// webSocketLanes sends two creates on one socket of the client's Responses WebSocket
// mode (client.beta.responses' ResponsesWS, over the `ws` package), each on its own
// lane (stream_id): the logprobs request and the web_search one. Every event echoes
// its lane, and each lane's events and final response are those of the same request
// over SSE.
async function webSocketLanes() {
  const lanes = { logprobs: expect.logprobs, web_search: expect.webSearch };
  const ws = new ResponsesWS(client);
  const byLane = Object.fromEntries(Object.keys(lanes).map((id) => [id, []]));
  const done = new Promise((resolve, reject) => {
    let ended = 0;
    ws.on('event', (e) => {
      if (!(e.stream_id in byLane)) {
        reject(new CheckError(`FAIL websocket: an event of lane ${inspect(e.stream_id)}: ${inspect(e)}`));
        return;
      }
      byLane[e.stream_id].push(e);
      if (['response.completed', 'response.failed', 'response.incomplete'].includes(e.type) && ++ended === 2) resolve();
    });
    ws.on('error', reject);
    ws.on('close', (code, reason) => reject(new Error(`websocket closed early: ${code} ${reason}`)));
  });
  for (const [id, ref] of Object.entries(lanes)) {
    ws.send({ type: 'response.create', stream_id: id, ...ref.params });
  }
  try {
    await done;
  } finally {
    ws.close();
  }
  for (const [id, ref] of Object.entries(lanes)) {
    const events = byLane[id].map(({ stream_id, ...e }) => e);
    sameStream(`websocket lane ${id}`, { events, final: events.at(-1).response }, ref);
  }
  eq('websocket: delta logprobs on their lane', deltaLogprobs(byLane.logprobs), deltaLogprobs(expect.logprobs.events));
}

async function main() {
  await logprobs();
  await toolSearch();
  await compaction();
  await webSearch();
  await webSocketLanes();
}

main().catch((err) => {
  console.error(err instanceof CheckError ? err.message : err);
  process.exit(1);
});
