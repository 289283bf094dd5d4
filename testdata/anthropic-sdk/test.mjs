// End-to-end check of hearth's Messages API with the official `@anthropic-ai/sdk`
// package: messages.create and messages.stream in a tool loop, and countTokens.
//
// Run by server/anthropic_sdk_e2e_test.go, which starts hearth and passes what this
// script expects through the environment (nothing about the models is hard-coded):
//
//   ANTHROPIC_BASE_URL   hearth's base URL, e.g. http://127.0.0.1:PORT (no /v1)
//   ANTHROPIC_API_KEY    the key hearth was started with (sent as x-api-key)
//   HEARTH_SDK_EXPECT    JSON: {
//     plain: {model, text, output_tokens},
//     tools: {model, prompt, tools, calls: [{name, input}], outputs: [string], answer}
//   }
//
// Prints one line per passed check and exits non-zero on the first mismatch.
import Anthropic from '@anthropic-ai/sdk';
import { isDeepStrictEqual, inspect } from 'node:util';

class CheckError extends Error {}

function fail(label, message) {
  throw new CheckError(`FAIL ${label}: ${message}`);
}

function eq(label, got, want) {
  if (!isDeepStrictEqual(got, want)) {
    fail(label, `got ${inspect(got, { depth: 6 })}, want ${inspect(want, { depth: 6 })}`);
  }
  console.log(`ok   ${label}`);
}

const expect = JSON.parse(process.env.HEARTH_SDK_EXPECT);
const client = new Anthropic({ maxRetries: 0, timeout: 120_000 });

function calls(msg) {
  return msg.content.filter((b) => b.type === 'tool_use').map((b) => ({ name: b.name, input: b.input }));
}

async function main() {
  // A plain answer, created and streamed.
  const p = expect.plain;
  const ask = { model: p.model, max_tokens: 256, messages: [{ role: 'user', content: 'hi' }] };
  const m = await client.messages.create(ask);
  eq('create: text', m.content, [{ type: 'text', text: p.text }]);
  eq('create: stop_reason', m.stop_reason, 'end_turn');
  eq('create: output_tokens', m.usage.output_tokens, p.output_tokens);
  const counted = await client.messages.countTokens({ model: p.model, messages: ask.messages });
  eq('countTokens: the run\'s prompt', counted.input_tokens, m.usage.input_tokens + m.usage.cache_read_input_tokens);

  const stream = client.messages.stream(ask);
  let deltas = '';
  stream.on('text', (t) => { deltas += t; });
  const sm = await stream.finalMessage();
  eq('stream: text events', deltas, p.text);
  eq('stream: final message', sm.content, [{ type: 'text', text: p.text }]);
  eq('stream: usage', [sm.usage.output_tokens, sm.usage.input_tokens + sm.usage.cache_read_input_tokens > 0], [p.output_tokens, true]);

  // A tool loop: the calls, then their results, then the answer; the first turn
  // created, the second streamed.
  const t = expect.tools;
  const messages = [{ role: 'user', content: t.prompt }];
  const first = await client.messages.create({ model: t.model, max_tokens: 1024, tools: t.tools, messages });
  eq('tools: calls', calls(first), t.calls);
  eq('tools: stop_reason', first.stop_reason, 'tool_use');
  const thinking = first.content.find((b) => b.type === 'thinking');
  if (!thinking || !thinking.signature) fail('tools: thinking', inspect(first.content));
  console.log('ok   tools: thinking with a signature');

  const streamed = await client.messages.stream({ model: t.model, max_tokens: 1024, tools: t.tools, messages }).finalMessage();
  eq('tools: streamed calls', calls(streamed), t.calls);
  // The same thinking, sealed again (each seal has its own nonce).
  eq('tools: streamed thinking', [streamed.content[0].type, streamed.content[0].thinking, streamed.content[0].signature.length > 0],
    ['thinking', thinking.thinking, true]);

  messages.push({ role: 'assistant', content: first.content });
  messages.push({
    role: 'user',
    content: first.content.filter((b) => b.type === 'tool_use').map((b, i) => ({ type: 'tool_result', tool_use_id: b.id, content: t.outputs[i] })),
  });
  const count = await client.messages.countTokens({ model: t.model, tools: t.tools, messages });
  const final = await client.messages.stream({ model: t.model, max_tokens: 1024, tools: t.tools, messages }).finalMessage();
  eq('tools: answer', final.content, [{ type: 'text', text: t.answer }]);
  eq('tools: stop_reason after results', final.stop_reason, 'end_turn');
  eq('tools: countTokens of the second turn', count.input_tokens, final.usage.input_tokens + final.usage.cache_read_input_tokens);

  // Errors come back as the SDK's typed errors.
  try {
    await client.messages.create({ model: 'no-such-model:latest', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] });
    fail('unknown model', 'no error');
  } catch (e) {
    if (!(e instanceof Anthropic.NotFoundError)) throw e;
    eq('unknown model: not_found_error', e.error?.error?.type, 'not_found_error');
  }
  try {
    await new Anthropic({ apiKey: 'sk-wrong', maxRetries: 0 }).messages.create(ask);
    fail('wrong key', 'no error');
  } catch (e) {
    if (!(e instanceof Anthropic.AuthenticationError)) throw e;
    eq('wrong key: authentication_error', e.error?.error?.type, 'authentication_error');
  }
}

main().catch((e) => {
  console.error(e instanceof CheckError ? e.message : e);
  process.exit(1);
});
