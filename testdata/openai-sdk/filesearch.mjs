// End-to-end check of file search with the official `openai` npm package: the team's
// documents uploaded (files.create, vectorStores.fileBatches.uploadAndPoll), searched
// (vectorStores.search), then asked about with the file_search tool
// (responses.create, plain and streamed), the search's item, results and the answer's
// file_citation checked.
//
// Run by server/filesearch_sdk_e2e_test.go (TestOpenAISDKFileSearchE2E), which starts
// hearth with the file_search kind and passes:
//
//   OPENAI_BASE_URL   hearth's base URL, e.g. http://127.0.0.1:PORT/v1
//   OPENAI_API_KEY    a key hearth accepts
//   HEARTH_FS_EXPECT  JSON: {model, embeddingModel, docs: {name: text}, input, query, answer}
//                     (the script model, the script embedding model, the documents,
//                     the question, the query the model searches for and its answer)
//
// Prints one line per passed check and exits non-zero on the first mismatch.
import OpenAI, { toFile } from 'openai';
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

const expect = JSON.parse(process.env.HEARTH_FS_EXPECT ?? 'null');
if (!expect || !process.env.OPENAI_BASE_URL) {
  console.error('missing HEARTH_FS_EXPECT or OPENAI_BASE_URL');
  process.exit(2);
}
const client = new OpenAI({ maxRetries: 0 });
const file = (name) => toFile(Buffer.from(expect.docs[name]), name);

async function main() {
  // One file uploaded on its own, one by the batch helper.
  const handbook = await client.files.create({ file: await file('handbook.md'), purpose: 'assistants' });
  eq('files.create', [handbook.object, handbook.filename, handbook.purpose, handbook.bytes],
    ['file', 'handbook.md', 'assistants', Buffer.byteLength(expect.docs['handbook.md'])]);
  // The embedding model is hearth's extension field, sent as the SDK sends any body.
  const store = await client.vectorStores.create({ name: 'docs', hearth: { embedding_model: expect.embeddingModel } });
  eq('vectorStores.create', [store.object, store.name], ['vector_store', 'docs']);
  const batch = await client.vectorStores.fileBatches.uploadAndPoll(
    store.id,
    { files: [await file('kettle.md')], fileIds: [handbook.id] },
    { pollIntervalMs: 50 },
  );
  eq('fileBatches.uploadAndPoll', [batch.object, batch.status, batch.file_counts.completed, batch.file_counts.total],
    ['vector_store.files_batch', 'completed', 2, 2]);

  const page = await client.vectorStores.search(store.id, { query: expect.query, max_num_results: 2 });
  const hits = page.data;
  eq('vectorStores.search', hits.map((h) => h.filename), ['handbook.md', 'kettle.md']);

  const params = {
    model: expect.model,
    input: expect.input,
    tools: [{ type: 'file_search', vector_store_ids: [store.id], max_num_results: 2 }],
    include: ['file_search_call.results'],
  };
  const index = expect.answer.indexOf('handbook.md') + 'handbook.md'.length;
  const citation = [{ type: 'file_citation', file_id: handbook.id, filename: 'handbook.md', index }];
  const results = hits.map((h) => ({ file_id: h.file_id, filename: h.filename, score: h.score, text: h.content[0].text, attributes: h.attributes }));
  const check = (label, r) => {
    eq(`${label}: status`, r.status, 'completed');
    eq(`${label}: items`, r.output.map((it) => it.type), ['file_search_call', 'message']);
    const call = r.output[0];
    eq(`${label}: file_search_call`, [call.status, call.queries], ['completed', [expect.query]]);
    eq(`${label}: results, as vectorStores.search found them`, call.results, results);
    eq(`${label}: output_text`, r.output_text, expect.answer);
    eq(`${label}: annotations`, r.output[1].content[0].annotations, citation);
  };

  const r = await client.responses.create(params);
  check('responses.create', r);
  const again = await client.responses.retrieve(r.id);
  eq('responses.retrieve', again.output, r.output);

  const stream = client.responses.stream(params);
  const types = [];
  const annotations = [];
  for await (const e of stream) {
    if (!types.includes(e.type)) types.push(e.type);
    if (e.type === 'response.output_text.annotation.added') annotations.push(e.annotation);
  }
  const streamed = await stream.finalResponse();
  check('responses.stream', streamed);
  eq('stream: the search events, in order', types.filter((t) => t.startsWith('response.file_search_call.')), [
    'response.file_search_call.in_progress',
    'response.file_search_call.searching',
    'response.file_search_call.completed',
  ]);
  eq('stream: annotation.added', annotations, citation);
}

main().catch((err) => {
  console.error(err instanceof CheckError ? err.message : err);
  process.exit(1);
});
