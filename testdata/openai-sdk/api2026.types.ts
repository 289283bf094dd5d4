// The 2026 shapes of api2026.mjs as the openai npm package types them: type-checked
// (tsc -p tsconfig.json, no output) by TestOpenAISDK2026E2E before the script runs.
// It compiles only if the package's types accept the requests the script sends and
// type the fields it reads back; nothing here runs.
import OpenAI from 'openai';
import type { ResponsesWS } from 'openai/resources/beta/responses/ws';

type Create = OpenAI.Responses.ResponseCreateParamsNonStreaming;
const weather: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'get_weather',
  description: 'Get the current weather of a city.',
  parameters: { type: 'object', properties: { city: { type: 'string' } } },
  strict: null,
};

// The requests: logprobs, tool_search hosted and client-executed (the client's
// tool_search_output as input), compaction, web_search with its sources.
export const requests: Create[] = [
  { model: 'm', input: 'hi', top_logprobs: 3, include: ['message.output_text.logprobs'], temperature: 0 },
  { model: 'm', input: 'q', tools: [{ type: 'tool_search' }, { ...weather, defer_loading: true }] },
  { model: 'm', input: 'q', tools: [{ type: 'tool_search', execution: 'client' }, { ...weather, defer_loading: true }] },
  {
    model: 'm',
    previous_response_id: 'resp_1',
    input: [{ type: 'tool_search_output', call_id: 'call_1', execution: 'client', tools: [weather] }],
  },
  {
    model: 'm',
    input: 'two',
    previous_response_id: 'resp_1',
    context_management: [{ type: 'compaction', compact_threshold: 1000 }],
  },
  { model: 'm', input: 'q', tools: [{ type: 'web_search' }], include: ['web_search_call.action.sources'] },
];

// A create on a lane of the WebSocket mode, and the lane its events echo.
export function lanes(ws: ResponsesWS): void {
  ws.send({ type: 'response.create', stream_id: 'logprobs', model: 'm', input: 'hi', top_logprobs: 3 });
  ws.on('event', (e) => {
    const lane: string | undefined = e.stream_id;
    void lane;
  });
}

// An output_text's logprobs carry bytes; a delta's are typed without them (OpenAI's
// delta shape: hearth sends them there too, and the client passes them through).
type Logprob = {
  token: string;
  logprob: number;
  bytes: number[];
  top_logprobs: { token: string; logprob: number; bytes: number[] }[];
};
type DeltaLogprob = { token: string; logprob: number; top_logprobs?: { token?: string; logprob?: number }[] };

// The fields read back from a response.
export function read(r: OpenAI.Responses.Response): void {
  for (const it of r.output) {
    switch (it.type) {
      case 'message':
        for (const c of it.content) {
          if (c.type !== 'output_text') continue;
          const lps: Logprob[] | undefined = c.logprobs;
          void lps;
          for (const a of c.annotations) {
            if (a.type === 'url_citation') {
              const cited: [string, string, number, number] = [a.url, a.title, a.start_index, a.end_index];
              void cited;
            }
          }
        }
        break;
      case 'tool_search_call': {
        const call: [string | null, 'server' | 'client', unknown] = [it.call_id, it.execution, it.arguments];
        void call;
        break;
      }
      case 'tool_search_output': {
        const loaded: string[] = it.tools.map((t) => (t.type === 'function' ? t.name : t.type));
        void loaded;
        break;
      }
      case 'compaction': {
        const sealed: string = it.encrypted_content;
        void sealed;
        break;
      }
      case 'web_search_call':
        if (it.action.type === 'search') {
          const query: string | undefined = it.action.query;
          const sources: { type: 'url'; url: string }[] | undefined = it.action.sources;
          void query, sources;
        }
        break;
    }
  }
}

// The fields read back from the events.
export function events(e: OpenAI.Responses.ResponseStreamEvent): void {
  if (e.type === 'response.output_text.delta') {
    const lps: DeltaLogprob[] = e.logprobs;
    void lps;
  }
  if (e.type === 'response.output_text.annotation.added') {
    const annotation: unknown = e.annotation;
    void annotation;
  }
  if (e.type === 'response.web_search_call.searching') {
    const item: string = e.item_id;
    void item;
  }
}
