// End-to-end check of hearth's Conversations API with the OpenAI Agents SDK
// (@openai/agents), both ways the SDK keeps an agent's history in a conversation:
//
//   - an OpenAIConversationsSession: the SDK reads the session's items
//     (conversations.items.list), sends them with the new input, and adds the run's new
//     items afterwards (conversations.items.create);
//   - run(..., { conversationId }): hearth keeps the history; the SDK sends only new
//     items with `conversation`, and hearth appends each response to it.
//
// Each run gives an Agent one function tool on a script model: the model calls the
// tool, the SDK runs it and sends the result back, and the model answers.
//
// Run by server/conversations_sdk_e2e_test.go (TestAgentsSDKConversationsE2E), which
// starts hearth and passes OPENAI_BASE_URL, OPENAI_API_KEY and HEARTH_AGENT_EXPECT
// (JSON: {model, input, tool, arguments: {...}, output, answer}), as for agents.mjs.
//
// Prints one line per passed check and exits non-zero on the first mismatch.
import OpenAI from 'openai';
import {
  Agent,
  run,
  tool,
  OpenAIConversationsSession,
  setDefaultOpenAIClient,
  setOpenAIAPI,
  setTracingDisabled,
} from '@openai/agents';
import { z } from 'zod';
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

const expect = JSON.parse(process.env.HEARTH_AGENT_EXPECT ?? 'null');
if (!expect || !process.env.OPENAI_BASE_URL) {
  console.error('missing HEARTH_AGENT_EXPECT or OPENAI_BASE_URL');
  process.exit(2);
}

setTracingDisabled(true);
const client = new OpenAI({ baseURL: process.env.OPENAI_BASE_URL, apiKey: process.env.OPENAI_API_KEY, maxRetries: 0 });
setDefaultOpenAIClient(client);
setOpenAIAPI('responses');

const calls = [];
const agent = new Agent({
  name: 'hearth agent',
  instructions: 'Answer with the help of the tool.',
  model: expect.model,
  tools: [
    tool({
      name: expect.tool,
      description: 'Looks the answer up.',
      parameters: z.object(Object.fromEntries(Object.keys(expect.arguments).map((k) => [k, z.string()]))),
      execute: async (args) => {
        calls.push(args);
        return expect.output;
      },
    }),
  ],
});

// The conversation's items as hearth lists them: type, and role or call name.
async function listed(id) {
  const out = [];
  for await (const it of client.conversations.items.list(id, { order: 'asc' })) {
    out.push(it.type === 'message' ? `${it.role}:${it.content.map((p) => p.text).join('')}` : it.type);
  }
  return out;
}

// One run: the call, the tool's output, the answer.
function checkRun(label, result) {
  eq(`${label}: tool calls`, calls.splice(0), [expect.arguments]);
  eq(`${label}: items`, result.newItems.map((it) => it.type), ['tool_call_item', 'tool_call_output_item', 'message_output_item']);
  eq(`${label}: final output`, result.finalOutput, expect.answer);
}

const turn = [`user:${expect.input}`, 'function_call', 'function_call_output', `assistant:${expect.answer}`];

async function session() {
  const s = new OpenAIConversationsSession();
  checkRun('session run 1', await run(agent, expect.input, { session: s }));
  const id = await s.getSessionId();
  eq('session id', id.startsWith('conv_'), true);
  eq('session run 1: conversation items', await listed(id), turn);
  // The second run reads the first from the session and sends it along.
  const second = await run(agent, expect.input, { session: s });
  checkRun('session run 2', second);
  eq('session run 2: conversation items', await listed(id), [...turn, ...turn]);
  eq('session: getItems(2)', (await s.getItems(2)).map((it) => it.type), ['function_call_result', 'message']);
  const popped = await s.popItem();
  eq('session: popItem', [popped.type, popped.role], ['message', 'assistant']);
  eq('session: after popItem', (await listed(id)).length, 2 * turn.length - 1);
  await s.clearSession();
  let gone = false;
  try {
    await client.conversations.retrieve(id);
  } catch (err) {
    gone = err.status === 404;
  }
  eq('session: clearSession deletes the conversation', gone, true);
}

async function serverManaged() {
  const conv = await client.conversations.create({});
  const first = await run(agent, expect.input, { conversationId: conv.id });
  checkRun('conversationId run 1', first);
  eq('conversationId run 1: conversation items', await listed(conv.id), turn);
  const second = await run(agent, expect.input, { conversationId: conv.id, stream: true });
  for await (const _ of second) {
    // drain the events
  }
  await second.completed;
  checkRun('conversationId run 2 (streamed)', second);
  eq('conversationId run 2: conversation items', await listed(conv.id), [...turn, ...turn]);
}

try {
  await session();
  await serverManaged();
} catch (err) {
  console.error(err instanceof CheckError ? err.message : err);
  process.exit(1);
}
