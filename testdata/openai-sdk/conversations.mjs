// End-to-end check of hearth's Conversations API with the official `openai` npm package:
// every conversations.* and conversations.items.* call, then a loop of responses on a
// conversation (plain and streamed), with the conversation's items checked after each
// turn and the prompt cache seen in cached_tokens.
//
// Run by server/conversations_sdk_e2e_test.go (TestOpenAISDKConversationsE2E), which
// starts hearth and passes:
//
//   OPENAI_BASE_URL     hearth's base URL, e.g. http://127.0.0.1:PORT/v1
//   OPENAI_API_KEY      a key hearth accepts
//   HEARTH_CONV_EXPECT  JSON: {model, reply} (the script model and the text it writes)
//
// Prints one line per passed check and exits non-zero on the first mismatch.
import OpenAI from 'openai';
import { isDeepStrictEqual, inspect } from 'node:util';

class CheckError extends Error {}

function eq(label, got, want) {
  if (!isDeepStrictEqual(got, want)) {
    throw new CheckError(
      `FAIL ${label}: got ${inspect(got, { depth: 6 })}, want ${inspect(want, { depth: 6 })}`,
    );
  }
  console.log(`ok   ${label}`);
}

async function rejects(label, promise, ErrorClass, status, code) {
  try {
    await promise;
  } catch (err) {
    eq(`${label}: error`, [err instanceof ErrorClass, err.status, err.code], [true, status, code]);
    return;
  }
  throw new CheckError(`FAIL ${label}: the call succeeded`);
}

const expect = JSON.parse(process.env.HEARTH_CONV_EXPECT ?? 'null');
if (!expect || !process.env.OPENAI_BASE_URL) {
  console.error('missing HEARTH_CONV_EXPECT or OPENAI_BASE_URL');
  process.exit(2);
}
const client = new OpenAI({ maxRetries: 0 });

// The text of a listed item, whatever its role.
const text = (item) => (item.content ?? []).map((p) => p.text ?? '').join('');

async function listAll(id, params) {
  const items = [];
  for await (const item of client.conversations.items.list(id, params)) {
    items.push(item);
  }
  return items;
}

async function crud() {
  const conv = await client.conversations.create({
    metadata: { topic: 'sdk' },
    items: [
      { type: 'message', role: 'developer', content: 'Be brief.' },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hello' }] },
    ],
  });
  eq('create: object', [conv.object, conv.id.startsWith('conv_'), conv.metadata], ['conversation', true, { topic: 'sdk' }]);
  eq('retrieve', await client.conversations.retrieve(conv.id), conv);
  const updated = await client.conversations.update(conv.id, { metadata: { topic: 'changed' } });
  eq('update', [updated.id, updated.metadata], [conv.id, { topic: 'changed' }]);

  const added = await client.conversations.items.create(conv.id, {
    items: [
      { type: 'message', role: 'user', content: 'second' },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'third' }] },
    ],
  });
  eq('items.create', [added.object, added.data.length, added.first_id, added.last_id, added.has_more],
    ['list', 2, added.data[0].id, added.data[1].id, false]);

  // limit 1 makes the SDK page with after=last_id until has_more is false.
  const asc = await listAll(conv.id, { limit: 1, order: 'asc' });
  eq('items.list asc, paged', asc.map(text), ['Be brief.', 'hello', 'second', 'third']);
  eq('items.list: statuses', asc.map((i) => i.status), ['completed', 'completed', 'completed', 'completed']);
  const desc = await listAll(conv.id, { limit: 3 });
  eq('items.list desc, paged', desc.map((i) => i.id), asc.map((i) => i.id).reverse());

  const one = await client.conversations.items.retrieve(asc[2].id, { conversation_id: conv.id });
  eq('items.retrieve', one, asc[2]);
  const afterDelete = await client.conversations.items.delete(asc[2].id, { conversation_id: conv.id });
  eq('items.delete answers with the conversation', afterDelete.id, conv.id);
  eq('items after delete', (await listAll(conv.id, { order: 'asc' })).map(text), ['Be brief.', 'hello', 'third']);
  await rejects('items.retrieve of a deleted item',
    client.conversations.items.retrieve(asc[2].id, { conversation_id: conv.id }), OpenAI.NotFoundError, 404, 'item_not_found');
  await rejects('items.create of 21 items',
    client.conversations.items.create(conv.id, { items: Array(21).fill({ role: 'user', content: 'x' }) }),
    OpenAI.BadRequestError, 400, 'array_above_max_length');

  const deleted = await client.conversations.delete(conv.id);
  eq('delete', deleted, { id: conv.id, object: 'conversation.deleted', deleted: true });
  await rejects('retrieve after delete', client.conversations.retrieve(conv.id), OpenAI.NotFoundError, 404, 'conversation_not_found');
}

async function loop() {
  const conv = await client.conversations.create();
  let prev;
  const said = [];
  for (const [i, input] of ['one', 'two', 'three'].entries()) {
    let r;
    if (i === 1) {
      // Streamed, naming the conversation as an object.
      r = await client.responses.stream({ model: expect.model, input, conversation: { id: conv.id } }).finalResponse();
    } else {
      r = await client.responses.create({ model: expect.model, input, conversation: conv.id });
    }
    eq(`turn ${i + 1}: status, conversation, text`, [r.status, r.conversation, r.output_text],
      ['completed', { id: conv.id }, expect.reply]);
    said.push(input, expect.reply);
    const items = await listAll(conv.id, { order: 'asc' });
    eq(`turn ${i + 1}: conversation items`, items.map(text), said);
    eq(`turn ${i + 1}: the output is the last item`, items.at(-1).id, r.output[0].id);
    if (prev) {
      // The turn's prompt is the previous turn's prompt, its output, and the new input;
      // the runtime's cache holds all of the previous turn but its last token sampled,
      // which is never evaluated.
      eq(`turn ${i + 1}: cached_tokens`, r.usage.input_tokens_details.cached_tokens,
        prev.usage.input_tokens + prev.usage.output_tokens - 1);
    }
    prev = r;
  }
  await rejects('conversation with previous_response_id',
    client.responses.create({ model: expect.model, input: 'x', conversation: conv.id, previous_response_id: prev.id }),
    OpenAI.BadRequestError, 400, 'mutually_exclusive_parameters');
  await rejects('unknown conversation',
    client.responses.create({ model: expect.model, input: 'x', conversation: 'conv_unknown' }),
    OpenAI.NotFoundError, 404, 'conversation_not_found');
  await client.conversations.delete(conv.id);
  eq('the responses outlive their conversation', (await client.responses.retrieve(prev.id)).id, prev.id);
}

try {
  await crud();
  await loop();
} catch (err) {
  console.error(err instanceof CheckError ? err.message : err);
  process.exit(1);
}
