// The reference MCP server tests/mcp/test_conformance.py runs the conformance suite against,
// directly and behind `maitred mcp`. The suite's own everything-server lives in its repository,
// not in the npm package, so this one is written here, to what each server scenario of
// @modelcontextprotocol/conformance 0.1.16 asks (`conformance list --server`): every tool,
// resource, template and prompt those scenarios name, completions, resource subscriptions
// (with `notifications/resources/updated` while subscribed), logging with `logging/setLevel`,
// progress, sampling and elicitation, a stream closed mid-call and resumed from its event
// store (`test_reconnection`), and Host/Origin checks against DNS rebinding.
//
// It is built on the MCP TypeScript SDK the suite itself depends on, resolved from the folder
// `make conformance-deps` installs (CONFORMANCE_HOME, default .cache/conformance at the
// repository root), and serves streamable HTTP on 127.0.0.1 with one MCP session per client.
//
//   node reference_server.mjs [port]      # prints "reference server: http://127.0.0.1:PORT/mcp"

import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';

const here = path.dirname(fileURLToPath(import.meta.url));
const home = process.env.CONFORMANCE_HOME || path.resolve(here, '../../../.cache/conformance');
const require = createRequire(path.join(home, 'package.json'));
const { Server } = require('@modelcontextprotocol/sdk/server/index.js');
const { StreamableHTTPServerTransport } = require('@modelcontextprotocol/sdk/server/streamableHttp.js');
const types = require('@modelcontextprotocol/sdk/types.js');

// a 1x1 red PNG and a silent 8 kHz WAV header, both made here
const PNG = Buffer.concat([
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  chunk('IHDR', Buffer.concat([u32be(1), u32be(1), Buffer.from([8, 2, 0, 0, 0])])),
  chunk('IDAT', zlib.deflateSync(Buffer.from([0, 255, 0, 0]))),
  chunk('IEND', Buffer.alloc(0)),
]).toString('base64');
const WAV = Buffer.concat([
  Buffer.from('RIFF'), u32(36), Buffer.from('WAVEfmt '), u32(16), u16(1), u16(1), u32(8000),
  u32(8000), u16(1), u16(8), Buffer.from('data'), u32(0),
]).toString('base64');

function chunk(kind, data) {
  const body = Buffer.concat([Buffer.from(kind), data]);
  return Buffer.concat([u32be(data.length), body, u32be(zlib.crc32(body))]);
}
function u32be(n) { const b = Buffer.alloc(4); b.writeUInt32BE(n >>> 0); return b; }
function u32(n) { const b = Buffer.alloc(4); b.writeUInt32LE(n); return b; }
function u16(n) { const b = Buffer.alloc(2); b.writeUInt16LE(n); return b; }

const LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];
const WATCHED = 'test://watched-resource';
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));
const text = (t) => ({ type: 'text', text: t });
const noArgs = { type: 'object', properties: {} };

const TOOLS = [
  { name: 'test_simple_text', description: 'Answers with one text block', inputSchema: noArgs },
  { name: 'test_image_content', description: 'Answers with a PNG image', inputSchema: noArgs },
  { name: 'test_audio_content', description: 'Answers with a WAV clip', inputSchema: noArgs },
  { name: 'test_embedded_resource', description: 'Answers with an embedded text resource', inputSchema: noArgs },
  { name: 'test_multiple_content_types', description: 'Answers with text, an image and a resource', inputSchema: noArgs },
  { name: 'test_tool_with_logging', description: 'Logs three messages while it runs', inputSchema: noArgs },
  { name: 'test_tool_with_progress', description: 'Reports progress 0, 50, 100 of 100', inputSchema: noArgs },
  { name: 'test_error_handling', description: 'Always fails (isError)', inputSchema: noArgs },
  {
    name: 'test_sampling',
    description: 'Asks the client for an LLM completion of a prompt',
    inputSchema: { type: 'object', properties: { prompt: { type: 'string' } }, required: ['prompt'] },
  },
  {
    name: 'test_elicitation',
    description: 'Asks the user for a username and an email',
    inputSchema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
  },
  { name: 'test_elicitation_sep1034_defaults', description: 'Asks with defaults for every primitive type', inputSchema: noArgs },
  { name: 'test_elicitation_sep1330_enums', description: 'Asks with every kind of enum', inputSchema: noArgs },
  { name: 'test_reconnection', description: 'Closes its response stream mid-call; the result follows on reconnection', inputSchema: noArgs },
  {
    name: 'json_schema_2020_12_tool',
    description: 'A tool whose input schema uses JSON Schema 2020-12 ($schema, $defs, $ref)',
    inputSchema: {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      $defs: {
        address: { type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } },
      },
      properties: { name: { type: 'string' }, address: { $ref: '#/$defs/address' } },
      additionalProperties: false,
    },
  },
];

const RESOURCES = [
  { uri: 'test://static-text', name: 'static-text', description: 'A fixed text', mimeType: 'text/plain' },
  { uri: 'test://static-binary', name: 'static-binary', description: 'A fixed PNG', mimeType: 'image/png' },
  { uri: WATCHED, name: 'watched-resource', description: 'Changes while someone is subscribed', mimeType: 'text/plain' },
];

const PROMPTS = [
  { name: 'test_simple_prompt', description: 'A prompt without arguments' },
  {
    name: 'test_prompt_with_arguments',
    description: 'A prompt with two arguments',
    arguments: [
      { name: 'arg1', description: 'First argument', required: true },
      { name: 'arg2', description: 'Second argument', required: true },
    ],
  },
  {
    name: 'test_prompt_with_embedded_resource',
    description: 'A prompt that embeds a resource',
    arguments: [{ name: 'resourceUri', description: 'The resource to embed', required: true }],
  },
  { name: 'test_prompt_with_image', description: 'A prompt with an image' },
];

// what completion/complete suggests, by argument name
const SUGGESTIONS = {
  arg1: ['paris', 'park', 'party', 'test', 'testing'],
  arg2: ['world', 'word', 'work'],
  id: ['1', '12', '123'],
};

/** A session's events, kept so a client that lost a stream can resume it (Last-Event-ID). */
class Events {
  constructor() { this.events = []; }
  async storeEvent(streamId, message) {
    const eventId = `${streamId}.${this.events.length}`;
    this.events.push({ eventId, streamId, message });
    return eventId;
  }
  async getStreamIdForEventId(eventId) {
    return this.events.find((e) => e.eventId === eventId)?.streamId;
  }
  async replayEventsAfter(lastEventId, { send }) {
    const at = this.events.findIndex((e) => e.eventId === lastEventId);
    if (at < 0) return '';
    const { streamId } = this.events[at];
    for (const e of this.events.slice(at + 1)) {
      if (e.streamId === streamId) await send(e.eventId, e.message);
    }
    return streamId;
  }
}

function call(name, args, extra, session, server) {
  const related = { relatedRequestId: extra.requestId };
  const log = async (level, data) => {
    if (LEVELS.indexOf(level) >= LEVELS.indexOf(session.level)) {
      await extra.sendNotification({ method: 'notifications/message', params: { level, logger: 'reference', data } });
    }
  };
  switch (name) {
    case 'test_simple_text':
      return { content: [text('This is a simple text response for testing.')] };
    case 'test_image_content':
      return { content: [{ type: 'image', data: PNG, mimeType: 'image/png' }] };
    case 'test_audio_content':
      return { content: [{ type: 'audio', data: WAV, mimeType: 'audio/wav' }] };
    case 'test_embedded_resource':
      return {
        content: [{
          type: 'resource',
          resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' },
        }],
      };
    case 'test_multiple_content_types':
      return {
        content: [
          text('Multiple content types test:'),
          { type: 'image', data: PNG, mimeType: 'image/png' },
          {
            type: 'resource',
            resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json', text: '{"test":"data","value":123}' },
          },
        ],
      };
    case 'test_tool_with_logging':
      return (async () => {
        await log('info', 'Tool execution started');
        await sleep(50);
        await log('info', 'Tool processing data');
        await sleep(50);
        await log('info', 'Tool execution completed');
        return { content: [text('Tool with logging executed successfully')] };
      })();
    case 'test_tool_with_progress':
      return (async () => {
        const token = extra._meta?.progressToken;
        for (const progress of [0, 50, 100]) {
          if (token !== undefined) {
            await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress, total: 100 } });
          }
          if (progress < 100) await sleep(50);
        }
        return { content: [text('Tool with progress executed successfully')] };
      })();
    case 'test_error_handling':
      return { isError: true, content: [text('This tool intentionally returns an error for testing')] };
    case 'test_sampling':
      return (async () => {
        const answer = await server.createMessage(
          { messages: [{ role: 'user', content: text(String(args.prompt ?? '')) }], maxTokens: 100 }, related);
        const said = answer.content?.type === 'text' ? answer.content.text : JSON.stringify(answer.content);
        return { content: [text(`LLM response: ${said}`)] };
      })();
    case 'test_elicitation':
      return elicit(server, related, String(args.message ?? ''), {
        type: 'object',
        properties: {
          username: { type: 'string', description: "User's response" },
          email: { type: 'string', description: "User's email address" },
        },
        required: ['username', 'email'],
      }, 'User response');
    case 'test_elicitation_sep1034_defaults':
      return elicit(server, related, 'Please review these values', {
        type: 'object',
        properties: {
          name: { type: 'string', default: 'John Doe' },
          age: { type: 'integer', default: 30 },
          score: { type: 'number', default: 95.5 },
          status: { type: 'string', enum: ['active', 'inactive', 'pending'], default: 'active' },
          verified: { type: 'boolean', default: true },
        },
      }, 'Elicitation completed');
    case 'test_elicitation_sep1330_enums':
      return elicit(server, related, 'Please choose', {
        type: 'object',
        properties: {
          untitledSingle: { type: 'string', enum: ['option1', 'option2', 'option3'] },
          titledSingle: {
            type: 'string',
            oneOf: [
              { const: 'value1', title: 'First Option' },
              { const: 'value2', title: 'Second Option' },
              { const: 'value3', title: 'Third Option' },
            ],
          },
          legacyEnum: { type: 'string', enum: ['opt1', 'opt2', 'opt3'], enumNames: ['Option One', 'Option Two', 'Option Three'] },
          untitledMulti: { type: 'array', items: { type: 'string', enum: ['option1', 'option2', 'option3'] } },
          titledMulti: {
            type: 'array',
            items: {
              anyOf: [
                { const: 'value1', title: 'First Choice' },
                { const: 'value2', title: 'Second Choice' },
                { const: 'value3', title: 'Third Choice' },
              ],
            },
          },
        },
      }, 'Elicitation completed');
    case 'test_reconnection':
      return (async () => {
        await sleep(100);
        extra.closeSSEStream?.(); // the client comes back with Last-Event-ID
        await sleep(200);
        return { content: [text('Reconnection test completed')] };
      })();
    case 'json_schema_2020_12_tool':
      return { content: [text(`received ${JSON.stringify(args)}`)] };
    default:
      throw new types.McpError(types.ErrorCode.InvalidParams, `unknown tool: ${name}`);
  }
}

async function elicit(server, related, message, requestedSchema, label) {
  const answer = await server.elicitInput({ message, requestedSchema }, related);
  return { content: [text(`${label}: action=${answer.action}, content=${JSON.stringify(answer.content ?? {})}`)] };
}

function read(uri, session) {
  if (uri === 'test://static-text') {
    return [{ uri, mimeType: 'text/plain', text: 'This is the content of the static text resource.' }];
  }
  if (uri === 'test://static-binary') return [{ uri, mimeType: 'image/png', blob: PNG }];
  if (uri === WATCHED) return [{ uri, mimeType: 'text/plain', text: `watched, version ${session.version}` }];
  const templated = /^test:\/\/template\/([^/]+)\/data$/.exec(uri);
  if (templated) {
    const id = decodeURIComponent(templated[1]);
    return [{ uri, mimeType: 'application/json', text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` }) }];
  }
  throw new types.McpError(types.ErrorCode.InvalidParams, `unknown resource: ${uri}`);
}

function prompt(name, args) {
  const user = (content) => ({ role: 'user', content });
  switch (name) {
    case 'test_simple_prompt':
      return [user(text('This is a simple prompt for testing.'))];
    case 'test_prompt_with_arguments':
      return [user(text(`Prompt with arguments: arg1='${args.arg1}', arg2='${args.arg2}'`))];
    case 'test_prompt_with_embedded_resource':
      return [
        user({ type: 'resource', resource: { uri: String(args.resourceUri), mimeType: 'text/plain', text: 'Embedded resource content for testing.' } }),
        user(text('Please process the embedded resource above.')),
      ];
    case 'test_prompt_with_image':
      return [user({ type: 'image', data: PNG, mimeType: 'image/png' }), user(text('Please analyze the image above.'))];
    default:
      throw new types.McpError(types.ErrorCode.InvalidParams, `unknown prompt: ${name}`);
  }
}

/** One MCP session: its own SDK server, logging level and subscriptions. */
function session() {
  const state = { level: 'debug', version: 0, subscribed: new Set(), timer: null };
  const server = new Server(
    { name: 'maitred-conformance-reference', version: '1.0.0' },
    { capabilities: { tools: {}, resources: { subscribe: true }, prompts: {}, logging: {}, completions: {} } },
  );
  const S = types;
  server.setRequestHandler(S.ListToolsRequestSchema, async () => ({ tools: TOOLS }));
  server.setRequestHandler(S.CallToolRequestSchema, async (req, extra) =>
    call(req.params.name, req.params.arguments ?? {}, extra, state, server));
  server.setRequestHandler(S.ListResourcesRequestSchema, async () => ({ resources: RESOURCES }));
  server.setRequestHandler(S.ListResourceTemplatesRequestSchema, async () => ({
    resourceTemplates: [{
      uriTemplate: 'test://template/{id}/data', name: 'template-data', description: 'Data for an id', mimeType: 'application/json',
    }],
  }));
  server.setRequestHandler(S.ReadResourceRequestSchema, async (req) => ({ contents: read(req.params.uri, state) }));
  server.setRequestHandler(S.SubscribeRequestSchema, async (req) => {
    state.subscribed.add(req.params.uri);
    if (state.timer === null) {
      state.timer = setInterval(() => {
        state.version += 1;
        for (const uri of state.subscribed) server.sendResourceUpdated({ uri }).catch(() => {});
      }, 1000);
    }
    return {};
  });
  server.setRequestHandler(S.UnsubscribeRequestSchema, async (req) => {
    state.subscribed.delete(req.params.uri);
    if (state.subscribed.size === 0 && state.timer !== null) {
      clearInterval(state.timer);
      state.timer = null;
    }
    return {};
  });
  server.setRequestHandler(S.ListPromptsRequestSchema, async () => ({ prompts: PROMPTS }));
  server.setRequestHandler(S.GetPromptRequestSchema, async (req) => ({ messages: prompt(req.params.name, req.params.arguments ?? {}) }));
  server.setRequestHandler(S.SetLevelRequestSchema, async (req) => {
    state.level = req.params.level;
    return {};
  });
  server.setRequestHandler(S.CompleteRequestSchema, async (req) => {
    const { name, value } = req.params.argument;
    const values = (SUGGESTIONS[name] ?? []).filter((v) => v.startsWith(value ?? ''));
    return { completion: { values, total: values.length, hasMore: false } };
  });
  server.onclose = () => { if (state.timer !== null) clearInterval(state.timer); };
  return server;
}

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/** Whether a Host (or an Origin's host) names this machine: the DNS-rebinding check. */
function loopback(host) {
  if (!host) return false;
  const name = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.split(':')[0];
  return LOOPBACK.has(name.toLowerCase());
}

function refuse(res, status, message) {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
}

const transports = new Map();

const httpServer = http.createServer(async (req, res) => {
  if (new URL(req.url, 'http://x').pathname !== '/mcp') return refuse(res, 404, 'not found');
  if (!loopback(req.headers.host)) return refuse(res, 403, `host ${req.headers.host} is not allowed`);
  if (req.headers.origin !== undefined) {
    let host = '';
    try { host = new URL(req.headers.origin).host; } catch { /* refused below */ }
    if (!loopback(host)) return refuse(res, 403, `origin ${req.headers.origin} is not allowed`);
  }
  const id = req.headers['mcp-session-id'];
  if (id !== undefined) {
    const known = transports.get(id);
    if (known === undefined) return refuse(res, 404, 'unknown session');
    return known.handleRequest(req, res);
  }
  if (req.method !== 'POST') return refuse(res, 400, 'no session: initialize first');
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    eventStore: new Events(),
    retryInterval: 100,
    onsessioninitialized: (sid) => transports.set(sid, transport),
  });
  transport.onclose = () => { if (transport.sessionId) transports.delete(transport.sessionId); };
  await session().connect(transport);
  return transport.handleRequest(req, res);
});

httpServer.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => {
  console.log(`reference server: http://127.0.0.1:${httpServer.address().port}/mcp`);
});
process.on('SIGTERM', () => process.exit(0));
