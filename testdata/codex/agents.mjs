// End-to-end check of hearth with the OpenAI Agents SDK (@openai/agents): an Agent with
// one function tool runs its loop against a script model, once with `run` and once
// streamed. The model calls the tool, the SDK runs it and sends the result back, and
// the model's answer becomes the final output.
//
// Run by server/codex_e2e_test.go (TestAgentsSDKE2E), which starts hearth and passes
// everything this script expects through the environment:
//
//   OPENAI_BASE_URL      hearth's base URL, e.g. http://127.0.0.1:PORT/v1
//   OPENAI_API_KEY       a key hearth accepts
//   HEARTH_AGENT_EXPECT  JSON: {model, input, tool, arguments: {...}, output, answer}
//
// Prints one line per passed check and exits non-zero on the first mismatch.
import OpenAI from 'openai';
import {
  Agent,
  run,
  tool,
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

// Traces would go to OpenAI's servers; a test talks to hearth only.
setTracingDisabled(true);
setDefaultOpenAIClient(
  new OpenAI({ baseURL: process.env.OPENAI_BASE_URL, apiKey: process.env.OPENAI_API_KEY, maxRetries: 0 }),
);
setOpenAIAPI('responses');

// The tool's parameters are the script's argument names; its result is what the
// model reads back. Every call is recorded.
const calls = [];
const argsSchema = z.object(
  Object.fromEntries(Object.keys(expect.arguments).map((k) => [k, z.string()])),
);
const agent = new Agent({
  name: 'hearth agent',
  instructions: 'Answer with the help of the tool.',
  model: expect.model,
  tools: [
    tool({
      name: expect.tool,
      description: 'Looks the answer up.',
      parameters: argsSchema,
      execute: async (args) => {
        calls.push(args);
        return expect.output;
      },
    }),
  ],
});

async function check(label, stream) {
  calls.length = 0;
  let result;
  if (stream) {
    result = await run(agent, expect.input, { stream: true });
    let events = 0;
    for await (const _ of result) {
      events++;
    }
    await result.completed;
    if (events === 0) {
      throw new CheckError(`FAIL ${label}: the streamed run yielded no events`);
    }
  } else {
    result = await run(agent, expect.input);
  }
  eq(`${label}: tool calls`, calls, [expect.arguments]);
  eq(`${label}: items`, result.newItems.map((it) => it.type), [
    'tool_call_item',
    'tool_call_output_item',
    'message_output_item',
  ]);
  const [call, output] = result.newItems;
  eq(`${label}: call`, { name: call.rawItem.name, arguments: JSON.parse(call.rawItem.arguments) }, {
    name: expect.tool,
    arguments: expect.arguments,
  });
  eq(`${label}: call output`, output.output, expect.output);
  eq(`${label}: final output`, result.finalOutput, expect.answer);
  eq(`${label}: model turns`, result.rawResponses.length, 2);
}

try {
  await check('run', false);
  await check('run stream', true);
} catch (err) {
  console.error(err instanceof CheckError ? err.message : err);
  process.exit(1);
}
