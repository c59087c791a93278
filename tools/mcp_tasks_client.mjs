// The TypeScript MCP SDK's client against `deepsearch mcp` (stdio), every request with a
// 4 s timeout, standing in for a host's limit (tools/mcp_tasks_check.py runs it in front
// of a slow fake LLM; see docs/mcp.md for what it printed). Needs
// `npm install @modelcontextprotocol/sdk` in the folder this file is copied to.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';

// stdio (the command in DEEPSEARCH_MCP_COMMAND), or HTTP at DEEPSEARCH_MCP_URL with the key.
const url = process.env.DEEPSEARCH_MCP_URL;
const timeout = 4000;
const t0 = Date.now();
const log = (...parts) => console.log(`${((Date.now() - t0) / 1000).toFixed(1).padStart(5)}s`, ...parts);
const head = (result) => (result.content?.[0]?.text ?? '').split('\n')[0].slice(0, 90);

const client = new Client({ name: 'ts-tasks-check', version: '0' }, { capabilities: {} });
if (url) {
  const headers = { Authorization: `Bearer ${process.env.DEEPSEARCH_SERVER_KEY}` };
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
} else {
  const [command, ...args] = JSON.parse(process.env.DEEPSEARCH_MCP_COMMAND);
  await client.connect(new StdioClientTransport({ command, args, env: process.env, stderr: 'inherit' }));
}
const { tools } = await client.listTools({}, { timeout });
log('tools/list:', tools.map((t) => `${t.name} execution.taskSupport=${t.execution?.taskSupport}`).join());
log('server tasks capability:', JSON.stringify(client.getServerCapabilities().tasks));

// 1. A plain call, 4 s timeout: what hosts without tasks see.
try {
  await client.callTool({ name: 'research', arguments: { question: 'Q1 plain call?' } }, undefined, { timeout });
  log('1. plain call: returned');
} catch (error) {
  log('1. plain call:', error.message);
}

// 2. A plain call, 4 s timeout reset by each progress notification.
try {
  const progressed = await client.callTool(
    { name: 'research', arguments: { question: 'Q2 plain call, timeout reset on progress?' } },
    undefined,
    { timeout, resetTimeoutOnProgress: true, onprogress: (p) => log('2. progress', p.progress, p.message.trim().slice(0, 60)) },
  );
  log('2. plain call with resetTimeoutOnProgress:', head(progressed));
} catch (error) {
  log('2. plain call with resetTimeoutOnProgress:', error.message);
}

// 3. As a task: callToolStream, the same 4 s timeout on each of its requests.
async function streamed(label, question, onStatus) {
  let taskId;
  let last;
  for await (const m of client.experimental.tasks.callToolStream(
    { name: 'research', arguments: { question } }, undefined, { timeout })) {
    if (m.type === 'taskCreated') {
      taskId = m.task.taskId;
      log(`${label} taskCreated status=${m.task.status} ttl=${m.task.ttl} pollInterval=${m.task.pollInterval}`);
    } else if (m.type === 'taskStatus') {
      const line = `status=${m.task.status} "${(m.task.statusMessage ?? '').trim().slice(0, 60)}"`;
      if (line !== last) log(`${label} taskStatus ${line}`);
      last = line;
      if (onStatus) await onStatus(m.task, taskId);
    } else if (m.type === 'result') {
      const refs = m.result.structuredContent?.references ?? [];
      log(`${label} result isError=${m.result.isError} status=${m.result.structuredContent?.status} references=${refs.length}`);
      log(`${label} text: ${head(m.result)}`);
      log(`${label} reference 1: ${refs[0]?.url}`);
    } else {
      log(`${label} error: ${m.error.message}`);
    }
  }
  return taskId;
}

const done = await streamed('3.', 'Q3 as a task?');
log('3. tasks/get afterwards:', (await client.experimental.tasks.getTask(done, { timeout })).status);
const again = await client.experimental.tasks.getTaskResult(done, CallToolResultSchema, { timeout });
log('3. tasks/result fetched again:', head(again));

// 4. A second task, cancelled once its first step is done.
let cancelled = false;
const stopped = await streamed('4.', 'Q4 cancelled as a task?', async (task, taskId) => {
  if (!cancelled && (task.statusMessage ?? '').trim().startsWith('1 search')) {
    cancelled = true;
    console.log(`CANCEL_AT_EPOCH_MS=${Date.now()}`);
    const reply = await client.experimental.tasks.cancelTask(taskId, { timeout });
    log(`4. tasks/cancel -> status=${reply.status} "${reply.statusMessage}"`);
  }
});
log('4. tasks/get afterwards:', (await client.experimental.tasks.getTask(stopped, { timeout })).status);
const partial = await client.experimental.tasks.getTaskResult(stopped, CallToolResultSchema, { timeout });
log(`4. tasks/result: isError=${partial.isError} status=${partial.structuredContent?.status} text: ${head(partial)}`);

const listed = await client.experimental.tasks.listTasks(undefined, { timeout });
log('5. tasks/list:', listed.tasks.map((t) => t.status).join(', '));

// 6. A task still running when the client goes (stdio: stdin closes; HTTP: the session
// ends, the task runs on until the server stops).
for await (const m of client.experimental.tasks.callToolStream(
  { name: 'research', arguments: { question: 'Q6 running when stdin closes?' } }, undefined, { timeout })) {
  if (m.type === 'taskStatus' && (m.task.statusMessage ?? '').trim().startsWith('1 search')) break;
}
console.log(`CLOSE_AT_EPOCH_MS=${Date.now()}`);
await client.close();
log('6. closed');
